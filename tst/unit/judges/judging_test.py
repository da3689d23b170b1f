"""One judgement against a stand-in judge on loopback: a verdict, told to the observers with its
seconds and tokens; what passes (500, 429, no answer) retried within the deadline, what does not
(401) failed at once; garbage and a score off the scale failed; the same judgement asked once, in
flight or kept (in memory, on disk); each endpoint's requests in flight bounded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agent_env import ArgumentError
from agent_env.judges import Judge, JudgeCall, JudgeError, JudgeScale, Judging, Verdict
from tst.support.addresses import free_port_on
from tst.support.judge_stand_in import API_KEY, MODEL, contains, started
from tst.support.serving import Serve

pytestmark = pytest.mark.needs("judge_installed", "openenv_installed")

KEY_VARIABLE = "JUDGE_TEST_KEY"
THANKED = {"turns": [{"turn": 1, "prompt": "Which room?", "reply": "Room 214. Thank you!"}]}


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, API_KEY)


def judge_at(url: str | None, **fields: Any) -> Judge:
    settings: dict[str, Any] = {
        "label": "judge 'tone'",
        "model": MODEL,
        "rubric": "The reply thanks the guest.",
        "url": url,
        "api_key_env": KEY_VARIABLE,
        **fields,
    }
    return Judge(**settings)


def asked(judging: Judging, judge: Judge, *transcripts: dict[str, Any]) -> list[Verdict | JudgeError]:
    """Each transcript's verdict (or failure), asked at once on one loop; the judging closed after."""

    async def main() -> list[Verdict | JudgeError]:
        try:
            found = await asyncio.gather(
                *(judging.verdict(judge, t) for t in transcripts), return_exceptions=True
            )
        finally:
            await judging.aclose()
        for one in found:
            if not isinstance(one, Verdict | JudgeError):
                raise one
        return list(found)  # type: ignore[arg-type]

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


def told(judging: Judging) -> list[JudgeCall]:
    calls: list[JudgeCall] = []
    judging.observe(calls.append)
    return calls


def reply(text: str) -> dict[str, Any]:
    return {"turns": [{"turn": 1, "reply": text}]}


def test_the_judge_s_verdict_is_its_score_and_reason_and_the_call_is_told_with_its_seconds_and_tokens(
    serve: Serve,
):
    stand_in, url = started(serve)
    judging = Judging()
    calls = told(judging)

    assert asked(judging, judge_at(url), THANKED) == [Verdict(10, "the reply says thank")]
    [call] = calls
    assert (call.outcome, call.model, call.url) == ("ok", MODEL, url)
    assert call.seconds is not None and call.seconds > 0
    assert call.prompt_tokens is not None and call.prompt_tokens > 0 and call.completion_tokens
    assert stand_in.transcripts == [THANKED]


def test_a_500_then_an_answer_is_retried_and_scored(serve: Serve):
    stand_in, url = started(serve, fail_first=1)

    assert asked(Judging(), judge_at(url), THANKED) == [Verdict(10, "the reply says thank")]
    assert len(stand_in.requests) == 2


@pytest.mark.parametrize("status", [500, 503, 429])
def test_an_endpoint_that_keeps_failing_is_asked_its_retries_then_the_judgement_is_unavailable(
    serve: Serve, status: int
):
    stand_in, url = started(serve, status=status)
    judging = Judging()
    calls = told(judging)

    [failed] = asked(judging, judge_at(url, retries=2), THANKED)

    assert isinstance(failed, JudgeError) and failed.kind == "unavailable"
    assert f"answered {status}" in str(failed) and "asked 3 times; retries: 2" in str(failed)
    assert str(failed).startswith(f"judge 'tone' (model '{MODEL}' at {url})")
    assert len(stand_in.requests) == 3
    assert [(c.outcome, c.reason) for c in calls] == [("failed", "unavailable")]


def test_a_refused_key_is_not_asked_again_and_says_which_variable_to_set(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
):
    stand_in, url = started(serve)
    monkeypatch.setenv(KEY_VARIABLE, "sk-wrong")

    [failed] = asked(Judging(), judge_at(url), THANKED)

    assert isinstance(failed, JudgeError) and failed.kind == "refused"
    assert "refused the API key (401)" in str(failed) and "api_key_env" in str(failed)
    assert len(stand_in.requests) == 1


def test_no_server_at_the_url_is_unavailable_after_the_retries():
    port = free_port_on(["127.0.0.1"])

    [failed] = asked(Judging(), judge_at(f"http://127.0.0.1:{port}/v1", retries=1), THANKED)

    assert isinstance(failed, JudgeError) and failed.kind == "unavailable"
    assert "no model server answers" in str(failed)


def test_a_judge_slower_than_its_deadline_fails_at_the_deadline_its_retries_included(serve: Serve):
    _, url = started(serve, latency_s=5.0)
    judging = Judging()
    calls = told(judging)
    began = time.monotonic()

    [failed] = asked(judging, judge_at(url, timeout_s=0.5), THANKED)

    assert time.monotonic() - began < 3
    assert isinstance(failed, JudgeError) and failed.kind == "timeout"
    assert "gave no verdict within its timeout_s of 0.5 s (its retries included)" in str(failed)
    assert calls[0].outcome == "failed" and calls[0].reason == "timeout" and calls[0].seconds


@pytest.mark.parametrize(
    ("garbage", "kind"),
    [
        ("prose", "unreadable"),
        ("off-scale", "off_scale"),
        ("missing-score", "unreadable"),
        ("html", "unreadable"),
    ],
)
def test_garbage_or_a_score_off_the_scale_is_no_verdict_told_with_why(serve: Serve, garbage: str, kind: str):
    stand_in, url = started(serve, garbage=garbage)
    judging = Judging()
    calls = told(judging)

    [failed] = asked(judging, judge_at(url), THANKED)

    assert isinstance(failed, JudgeError) and failed.kind == kind
    assert len(stand_in.requests) == 1  # garbage is not asked again
    assert [(c.outcome, c.reason) for c in calls] == [("failed", kind)]


def test_a_judge_with_no_endpoint_fails_saying_where_to_give_one():
    [failed] = asked(Judging(), judge_at(None), THANKED)

    assert isinstance(failed, JudgeError) and failed.kind == "no_endpoint"
    assert "--judge-url" in str(failed)


def test_the_same_judgement_again_is_kept_and_makes_no_request(serve: Serve):
    stand_in, url = started(serve)
    judging = Judging()
    calls = told(judging)

    first = asked(judging, judge_at(url), THANKED)
    again = asked(judging, judge_at(url), THANKED)

    assert first == again and len(stand_in.requests) == 1
    assert [c.outcome for c in calls] == ["ok", "cached"]
    assert calls[1].seconds is None and calls[1].prompt_tokens is None


def test_identical_judgements_asked_at_once_make_one_request(serve: Serve):
    stand_in, url = started(serve, latency_s=0.3)
    judging = Judging()
    calls = told(judging)

    verdicts = asked(judging, judge_at(url), *[THANKED] * 5)

    assert len(set(verdicts)) == 1 and len(stand_in.requests) == 1
    assert sorted(c.outcome for c in calls) == ["cached"] * 4 + ["ok"]


def test_a_failure_is_not_kept_so_the_next_asking_asks_again(serve: Serve):
    stand_in, url = started(serve, status=500)
    judging = Judging()
    asked(judging, judge_at(url, retries=0), THANKED)
    stand_in.status = None

    assert asked(judging, judge_at(url, retries=0), THANKED) == [Verdict(10, "the reply says thank")]
    assert len(stand_in.requests) == 2


def test_verdicts_kept_in_a_folder_spare_another_process_s_requests(serve: Serve, tmp_path: Path):
    stand_in, url = started(serve)
    asked(Judging(cache=tmp_path), judge_at(url), THANKED, reply("No."))

    later = Judging(cache=tmp_path)
    calls = told(later)
    verdicts = asked(later, judge_at(url), THANKED, reply("No."))

    assert verdicts == [Verdict(10, "the reply says thank"), Verdict(0, "the reply never says thank")]
    assert len(stand_in.requests) == 2 and [c.outcome for c in calls] == ["cached", "cached"]


def test_another_model_or_rubric_is_another_judgement(serve: Serve):
    stand_in, url = started(serve, rule=contains("room"))
    judging = Judging()

    asked(judging, judge_at(url), THANKED)
    asked(judging, judge_at(url, rubric="The reply names the room."), THANKED)
    asked(judging, judge_at(url, scale=JudgeScale(min=1, max=5)), THANKED)

    assert len(stand_in.requests) == 3


def test_an_endpoint_holds_at_most_its_max_concurrency_in_flight(serve: Serve):
    stand_in, url = started(serve, latency_s=0.2)
    judging = Judging()
    judge = judge_at(url, max_concurrency=3)
    judging.admit([judge])

    verdicts = asked(judging, judge, *[reply(f"Thank you, {n}.") for n in range(9)])

    assert all(isinstance(v, Verdict) for v in verdicts)
    assert stand_in.most_at_once == 3


def test_judges_of_one_endpoint_share_the_smallest_bound_of_theirs(serve: Serve):
    stand_in, url = started(serve, latency_s=0.2)
    judging = Judging()
    wide, narrow = judge_at(url, max_concurrency=8), judge_at(url, max_concurrency=2, rubric="Other.")
    judging.admit([wide, narrow])

    asked(judging, wide, *[reply(f"Thank you, {n}.") for n in range(6)])

    assert stand_in.most_at_once == 2


def test_the_serving_url_and_model_replace_every_judge_s_and_its_key_comes_from_its_own_variable(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
):
    stand_in, url = started(serve, model="served-judge")
    monkeypatch.setenv("AGENTENV_JUDGE_KEY", API_KEY)
    monkeypatch.setenv(KEY_VARIABLE, "sk-the-bundle-s-own-never-sent-elsewhere")
    judging = Judging(url=url, model="served-judge")

    verdicts = asked(judging, judge_at("https://judge.example/v1"), THANKED)

    assert verdicts == [Verdict(10, "the reply says thank")]
    assert stand_in.requests[0]["model"] == "served-judge"


def test_the_environment_gives_the_serving_url_model_and_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("AGENTENV_JUDGE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("AGENTENV_JUDGE_MODEL", "m2")
    monkeypatch.setenv("AGENTENV_JUDGE_CACHE", str(tmp_path))

    judging = Judging.from_environment()

    assert (judging.url, judging.model, judging.cache.folder) == ("http://127.0.0.1:9/v1", "m2", tmp_path)
    assert Judging.from_environment(model="m3").model == "m3"


def test_admitting_a_judge_without_an_endpoint_or_whose_key_is_unset_says_how_to_fix_it(
    monkeypatch: pytest.MonkeyPatch,
):
    with pytest.raises(ArgumentError, match=r"has no endpoint.*--judge-url"):
        Judging().admit([judge_at(None)])
    monkeypatch.delenv(KEY_VARIABLE)
    with pytest.raises(
        ArgumentError, match=f"reads its endpoint's key from \\${KEY_VARIABLE}, which is not set"
    ):
        Judging().admit([judge_at("https://judge.example/v1")])
    Judging(url="http://127.0.0.1:9/v1").admit([judge_at("https://judge.example/v1")])  # its key unused


@pytest.mark.parametrize("url", ["ftp://judge", "judge.example"])
def test_a_serving_url_that_is_not_http_is_refused(url: str):
    with pytest.raises(ArgumentError, match="must start with http"):
        Judging(url=url)
