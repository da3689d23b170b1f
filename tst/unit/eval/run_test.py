"""`evaluate(target, policy)`: the example bundle's eval split played over the wire by a scripted
chat-completions server, as a user calls it from Python."""

from __future__ import annotations

import json

import httpx
import pytest

from agent_env import load_bundle
from agent_env._trajectory_reader import read_trajectories
from agent_env.eval import END_TURN, RESULTS_FILE, EvalResult, OpenAIPolicy, PlaySettings, evaluate
from tst.support.chat_stand_in import API_KEY, MODEL, eval_ids, start_stand_in
from tst.support.outcomes import OutcomePolicy, outcome_tasks
from tst.support.wharf import WHARF

pytestmark = pytest.mark.needs("eval_installed")

IDS = eval_ids()
STORE, MOVE, STORE_THEN_MOVE, COUNT, MANIFEST = IDS[0], IDS[1], IDS[2], IDS[3], IDS[10]


def policy(url: str, **options) -> OpenAIPolicy:
    return OpenAIPolicy(url, MODEL, api_key=API_KEY, **{"max_retries": 2, **options})


def test_each_task_s_pass_at_k_and_mean_are_what_its_scripted_samples_imply_and_results_json_says_so(
    serve, tmp_path
):
    plays = {
        STORE: ["solve", "text", "solve"],
        STORE_THEN_MOVE: ["solve"] * 3,
        MANIFEST: ["solve", "text", "text"],
    }
    _, url = start_stand_in(serve, plays)

    result = evaluate(WHARF, policy(url), samples=3, concurrency=4, model=MODEL, out=tmp_path)

    by_id = {task.id: task for task in result.tasks}
    assert (by_id[STORE].passed, by_id[STORE].pass_at_1, by_id[STORE].pass_at_k) == (
        2,
        pytest.approx(2 / 3),
        1.0,
    )
    assert (by_id[STORE_THEN_MOVE].mean_score, by_id[STORE_THEN_MOVE].pass_at_k) == (1.0, 1.0)
    assert (by_id[MANIFEST].pass_at_1, by_id[MANIFEST].pass_at_k) == (pytest.approx(1 / 3), 1.0)
    assert by_id[COUNT].pass_at_k == 0.0 and by_id[COUNT].mean_score == 0.0
    assert result.samples == 33 and result.errors == 0
    assert result.pass_at_k == pytest.approx(3 / 11)
    assert result.mean_score == pytest.approx((2 + 3 + 1) / 33)
    written = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert written["model"] == MODEL and written["split"] == "eval" and written["settings"]["samples"] == 3
    assert [t["id"] for t in written["tasks"]] == IDS
    assert written["tasks"][0]["pass_at_1"] == pytest.approx(2 / 3)


def test_every_sample_is_written_as_a_trajectory_of_what_the_client_saw(serve, tmp_path):
    _, url = start_stand_in(serve, {STORE_THEN_MOVE: ["solve"], STORE: ["text"]})

    evaluate(WHARF, policy(url), model=MODEL, out=tmp_path)

    trajectories = {t.task.id: t for t in read_trajectories(tmp_path)}
    assert sorted(trajectories) == sorted(IDS)
    played = trajectories[STORE_THEN_MOVE]
    assert (played.recorded_by, played.model, played.score, played.outcome.kind) == (
        "eval",
        MODEL,
        1.0,
        "scored",
    )
    assert [turn.turn for turn in played.turns] == [1, 2]
    assert [call.tool for turn in played.turns for call in turn.calls] == ["add_crate", "move_crate"]
    assert all(
        call.result is not None and call.error_code is None for turn in played.turns for call in turn.calls
    )
    assert played.turns[0].reply == "Stored." and played.turns[1].reply == "Moved."
    assert played.verifiers and all(v.score == 1.0 for v in played.verifiers)
    assert (
        trajectories[STORE].score == 0.0 and trajectories[STORE].turns[0].reply == ""  # text is no reply
    )
    assert trajectories[MANIFEST].system_prompt


def test_each_call_is_answered_by_its_id_and_end_turn_by_the_next_turn_s_prompt_as_in_training(
    serve,
):
    scripted, url = start_stand_in(serve, {STORE_THEN_MOVE: ["solve"]})

    evaluate(WHARF, policy(url), concurrency=1)

    last = next(r for r in reversed(scripted.requests) if "Moved" not in str(r) and len(r["messages"]) > 6)
    names = [tool["function"]["name"] for tool in last["tools"]]
    assert names[-1] == END_TURN and "add_crate" in names
    calls = [c["id"] for m in last["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in last["messages"] if m["role"] == "tool"]
    assert calls == answered
    second_prompt = load_bundle(WHARF).tasks("eval")[_index(STORE_THEN_MOVE)].turns[1]
    ending = next(
        c["id"]
        for m in last["messages"]
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == END_TURN
    )
    assert [m["content"] for m in last["messages"] if m.get("tool_call_id") == ending] == [second_prompt]
    assert [m["role"] for m in last["messages"]].count("user") == 1  # as in training: no user message more


def test_a_call_whose_arguments_do_not_parse_ends_the_sample_with_an_empty_reply_as_trl_takes_it_for_text(
    serve, tmp_path
):
    _, url = start_stand_in(serve, {COUNT: ["malformed"]})

    evaluate(WHARF, policy(url), out=tmp_path)

    played = next(t for t in read_trajectories(tmp_path) if t.task.id == COUNT)
    assert (played.turns[0].invalid_tool_calls, played.turns[0].reply, played.turns[0].calls) == (1, "", [])
    assert played.outcome.kind == "scored" and played.score == 0.0


def test_max_tool_calls_ends_a_turn_once_it_has_made_that_many_calls(serve, tmp_path):
    clear = IDS[5]  # clear-bay-100: two calls
    _, url = start_stand_in(serve, {clear: ["solve"]})

    evaluate(WHARF, policy(url), settings=PlaySettings(max_tool_calls=1), out=tmp_path)

    played = next(t for t in read_trajectories(tmp_path) if t.task.id == clear)
    assert [call.tool for call in played.turns[0].calls] == ["remove_crate"]
    assert played.score is not None and played.score < 1.0


def test_a_request_that_fails_once_is_retried_and_its_sample_plays_on(serve):
    scripted, url = start_stand_in(serve, {STORE: ["solve"]}, fail_first=1)

    result = evaluate(WHARF, policy(url), concurrency=1)

    assert result.errors == 0
    assert next(t for t in result.tasks if t.id == STORE).passed == 1
    assert scripted.fail_first == 0


def test_a_sample_whose_requests_fail_past_the_retries_is_an_error_reported_apart_never_a_score_of_0(
    serve, tmp_path
):
    scripted, url = start_stand_in(serve, {STORE: ["solve", "solve"]}, down=frozenset({MOVE}))

    result = evaluate(WHARF, policy(url), samples=2, out=tmp_path)

    moved = next(t for t in result.tasks if t.id == MOVE)
    assert (moved.errors, moved.mean_score, moved.pass_at_k) == (2, None, None)
    assert result.errors == 2 and result.mean_score == pytest.approx(2 / 20)
    assert result.pass_at_k == pytest.approx(1 / 10)
    errors = [t for t in read_trajectories(tmp_path) if t.outcome.kind == "error"]
    assert len(errors) == 2 and all(t.score is None and "500" in t.outcome.reason for t in errors)
    assert len([r for r in scripted.requests if r["messages"][1]["content"].startswith("Move")]) >= 6
    assert json.loads((tmp_path / RESULTS_FILE).read_text())["errors"] == 2


def _index(task_id: str) -> int:
    return next(i for i, task in enumerate(load_bundle(WHARF).tasks("eval")) if task.id == task_id)


def test_a_server_at_a_url_with_a_token_is_played_as_a_bundle_is_and_its_verifiers_come_from_the_task_api(
    serve, tmp_path
):
    from agent_env.openenv import build_app

    _, url = start_stand_in(serve, {STORE: ["solve"], MOVE: ["text"]})
    server = serve(build_app(WHARF, token="tok-eval-3"))

    result = evaluate(server.url, policy(url), token="tok-eval-3", out=tmp_path)

    by_id = {task.id: task for task in result.tasks}
    assert (by_id[STORE].pass_at_1, by_id[MOVE].pass_at_1, result.errors) == (1.0, 0.0, 0)
    stored = next(t for t in read_trajectories(tmp_path) if t.task.id == STORE)
    expected = load_bundle(WHARF).tasks("eval")[_index(STORE)].verifiers
    assert [(v.type, v.weight) for v in stored.verifiers] == [(v.spec.type, v.spec.weight) for v in expected]
    assert [v.score for v in stored.verifiers] == [1.0] * len(expected)


def test_a_sample_whose_endpoint_answers_garbage_is_an_error_reported_apart_never_a_lost_session_or_a_0(
    serve, tmp_path
):
    _, url = start_stand_in(
        serve, {STORE: ["solve"]}, broken={MOVE: "garbage", COUNT: "not-json", MANIFEST: "huge"}
    )

    result = evaluate(WHARF, policy(url, max_retries=0), out=tmp_path)

    by_id = {task.id: task for task in result.tasks}
    assert [(by_id[i].errors, by_id[i].failed, by_id[i].mean_score) for i in (MOVE, COUNT, MANIFEST)] == [
        (1, 0, None)
    ] * 3
    assert (result.errors, result.failed, result.mean_score) == (3, 0, pytest.approx(1 / 8))
    errors = {t.task.id: t.outcome for t in read_trajectories(tmp_path) if t.outcome.kind == "error"}
    assert sorted(errors) == sorted([MOVE, COUNT, MANIFEST])
    assert {outcome.code for outcome in errors.values()} == {"POLICY_ERROR"}
    assert "502 Bad Gateway" in errors[MOVE].reason and f"the endpoint at {url}" in errors[COUNT].reason
    assert json.loads((tmp_path / RESULTS_FILE).read_text())["errors"] == 3


def test_results_json_holds_each_task_s_pass_rate_over_the_samples_played_errors_left_out(serve, tmp_path):
    ids = ["mixed", "unreachable", "always"]
    plays = {"mixed": ["pass", "error", "fail", "pass"], "unreachable": ["error"] * 4, "always": ["pass"] * 4}
    url = serve({"eval": outcome_tasks(ids)}).url

    evaluate(url, OutcomePolicy(plays), samples=4, concurrency=2, out=tmp_path)

    written = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert [(t["id"], t["pass_rate"]) for t in written["tasks"]] == [
        ("mixed", pytest.approx(2 / 3)),
        ("unreachable", None),
        ("always", 1.0),
    ]
    assert [t.pass_rate for t in EvalResult.read(tmp_path).tasks] == [pytest.approx(2 / 3), None, 1.0]


def test_results_json_holds_each_task_s_mean_and_the_population_spread_min_and_max_of_the_scores_played(
    serve, tmp_path
):
    ids = ["partial", "lone", "alike", "unreachable"]
    plays = {
        "partial": [0.03, 0.11, "error", 0.07],  # partial credit, never 1.0: pass rate 0
        "lone": ["error", "error", "error", 0.5],  # one sample played: no spread
        "alike": ["pass"] * 4,
        "unreachable": ["error"] * 4,  # nothing played: no mean, no spread
    }
    url = serve({"eval": outcome_tasks(ids)}).url

    evaluate(url, OutcomePolicy(plays), samples=4, concurrency=2, out=tmp_path)

    written = json.loads((tmp_path / RESULTS_FILE).read_text())
    measures = [(t["mean_score"], t["score_std"], t["min_score"], t["max_score"]) for t in written["tasks"]]
    assert measures == [
        (pytest.approx(0.07), pytest.approx((0.0032 / 3) ** 0.5), 0.03, 0.11),
        (0.5, 0.0, 0.5, 0.5),
        (1.0, 0.0, 1.0, 1.0),
        (None, None, None, None),
    ]
    assert [t["pass_rate"] for t in written["tasks"]] == [0.0, 0.0, 1.0, None]
    read = EvalResult.read(tmp_path).tasks[0]
    assert (read.score_std, read.min_score, read.max_score) == (pytest.approx(0.0327, abs=1e-4), 0.03, 0.11)


def test_results_json_carries_the_tasks_fingerprint_of_the_server_it_measured(serve, tmp_path):
    server = serve({"eval": outcome_tasks(["always"])})

    evaluate(server.url, OutcomePolicy({"always": ["pass"]}), out=tmp_path)

    status = httpx.get(f"{server.url}/tasks/status", timeout=10).json()
    written = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert written["tasks_fingerprint"] == status["tasks_fingerprint"]
    assert written["tasks_fingerprint"].startswith("sha256:")


def test_a_last_answer_in_plain_text_is_no_reply_so_a_reply_verifier_fails_as_it_does_in_training(
    serve, tmp_path
):
    _, url = start_stand_in(serve, {COUNT: ["solve", "solve-in-text"]})

    evaluate(WHARF, policy(url), samples=2, concurrency=1, out=tmp_path)

    played = sorted(
        (t for t in read_trajectories(tmp_path) if t.task.id == COUNT), key=lambda t: t.started_at or 0
    )
    assert [(t.turns[0].reply, t.score) for t in played] == [("2", 1.0), ("", 0.0)]


def test_a_harbor_path_is_loaded_as_a_bundle_never_taken_for_a_server_s_url(tmp_path) -> None:
    from agent_env._error_types import BundleError

    missing = tmp_path / "no-such-dataset"

    with pytest.raises(BundleError, match="no-such-dataset"):
        evaluate(f"harbor:{missing}", OutcomePolicy({}), split="train", out=tmp_path / "out")
