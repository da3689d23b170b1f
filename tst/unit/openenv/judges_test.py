"""A served bundle whose task is judged, played over the WebSocket as a trainer plays it: the reward
is the judge's verdict, an episode whose judge fails is unscorable (no reward), and `/metrics`
counts the judgements by outcome, the seconds the endpoint took and the tokens it counted; a relative
judge reads a GRPO group's episodes together when their last end_turns name the group."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agent_env import ArgumentError
from agent_env.openenv import AgentEnvAction, build_app
from tst.support.judge_stand_in import API_KEY, JudgeStandIn, contains
from tst.support.metrics import scrape
from tst.support.serving import Connect, Serve
from tst.unit.judges._play import KEY_VARIABLE, judged_bundle

pytestmark = pytest.mark.needs("judge_installed", "openenv_installed")


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, API_KEY)


def play(client: Any, reply: str) -> Any:
    """Shelve Dune, then end the turn with `reply`: the last answer."""
    client.reset(split="train", index=0)
    client.step(AgentEnvAction.call_tool("put_book", {"title": "Dune"}).wire())
    return client.step(AgentEnvAction.end_turn(reply).wire())


def test_the_reward_is_the_verdict_and_metrics_count_each_judgement_its_seconds_and_tokens(
    serve: Serve, connect: Connect, tmp_path: Path
):
    stand_in = JudgeStandIn(rule=contains("thank"))
    url = f"{serve(stand_in.app).url}/v1"
    server = serve(build_app(judged_bundle(tmp_path, url, retries=0)))
    player = connect(server.url)

    rewards = [play(player, "Shelved, thank you!").reward, play(player, "Shelved, thank you!").reward]
    rewards.append(play(player, "Shelved."))
    stand_in.status = 500
    failed = play(player, "Shelved at last.")
    samples = scrape(server.url)

    assert rewards[:2] == [1.0, 1.0] and rewards[2].reward == 0.0
    assert failed.done and failed.reward is None
    assert failed.observation["error"]["code"] == "VERIFIER_FAILED"
    assert "answered 500" in failed.observation["error"]["message"]
    calls = {labels: v for (name, labels), v in samples.items() if name == "agent_env_judge_calls_total"}
    assert calls[(("outcome", "ok"), ("reason", ""))] == 2
    assert calls[(("outcome", "cached"), ("reason", ""))] == 1
    assert calls[(("outcome", "failed"), ("reason", "unavailable"))] == 1
    assert samples[("agent_env_judge_seconds_count", ())] == 3  # the cached one asked nothing
    assert samples[("agent_env_judge_tokens_total", (("kind", "prompt"),))] > 0
    assert samples[("agent_env_judge_tokens_total", (("kind", "completion"),))] > 0
    assert len(stand_in.requests) == 3


def test_a_fresh_server_shows_its_judge_counters_at_zero(serve: Serve, tmp_path: Path):
    server = serve(build_app(judged_bundle(tmp_path, "http://127.0.0.1:9/v1")))

    samples = scrape(server.url)

    assert samples[("agent_env_judge_calls_total", (("outcome", "ok"), ("reason", "")))] == 0
    assert samples[("agent_env_judge_tokens_total", (("kind", "prompt"),))] == 0


def test_the_serving_url_and_model_replace_the_bundle_s_and_verdicts_are_kept_in_the_cache_folder(
    serve: Serve, connect: Connect, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    stand_in = JudgeStandIn(model="served-judge")
    url = f"{serve(stand_in.app).url}/v1"
    monkeypatch.setenv("AGENTENV_JUDGE_KEY", API_KEY)
    root = judged_bundle(tmp_path / "bundle", "https://judge.example/v1")
    cache = tmp_path / "verdicts"
    app = build_app(root, judge_url=url, judge_model="served-judge", judge_cache=cache)

    reward = play(connect(serve(app).url), "Thank you.").reward

    assert reward == 1.0 and stand_in.requests[0]["model"] == "served-judge"
    assert len(list(cache.glob("*/*.json"))) == 1


def test_a_bundle_whose_judge_has_no_endpoint_is_refused_before_it_serves(tmp_path: Path):
    root = judged_bundle(tmp_path, None)  # type: ignore[arg-type]

    with pytest.raises(ArgumentError, match="judge 'tone' has no endpoint"):
        build_app(root)


def test_a_group_s_episodes_on_their_own_sessions_are_judged_together_when_their_last_end_turns_name_it(
    serve: Serve, connect: Connect, tmp_path: Path
):
    stand_in = JudgeStandIn(rule=contains("thank"))
    url = f"{serve(stand_in.app).url}/v1"
    server = serve(build_app(judged_bundle(tmp_path, url, relative=True)))
    players = [connect(server.url), connect(server.url)]
    started = [player.reset(split="train", index=0) for player in players]
    for player in players:
        player.step(AgentEnvAction.call_tool("put_book", {"title": "Dune"}).wire())

    replies = ["Shelved, thank you!", "Shelved."]
    with ThreadPoolExecutor(2) as pool:
        ends = list(
            pool.map(
                lambda player, reply: player.step(AgentEnvAction.end_turn(reply, group=("g-1", 2)).wire()),
                players,
                replies,
            )
        )

    assert all(start.observation["judged_in_groups"] is True for start in started)
    assert [end.reward for end in ends] == [1.0, 0.0]
    assert stand_in.groups == [2] and len(stand_in.requests) == 1


@pytest.mark.parametrize(
    ("group", "said"),
    [
        ({"key": "g", "size": 1}, "a group's size is 2 to 64 rollouts, got 1"),
        ({"key": "g", "size": 2, "extra": 1}, 'metadata.group is {"key": TEXT, "size": N} and nothing else'),
        ({"key": 7, "size": 2}, "its key text, its size an integer"),
        ({"key": "g", "size": True}, "its key text, its size an integer"),
        ("g", 'metadata.group is {"key": TEXT, "size": N}'),
    ],
)
def test_a_malformed_group_is_refused_saying_its_shape_and_the_turn_stays_open(
    serve: Serve, connect: Connect, tmp_path: Path, group: Any, said: str
):
    server = serve(build_app(judged_bundle(tmp_path, "http://127.0.0.1:9/v1", relative=True)))
    player = connect(server.url)
    player.reset(split="train", index=0)

    refused = player.step({"kind": "end_turn", "reply": "Shelved.", "metadata": {"group": group}})
    listed = player.step(AgentEnvAction.list_tools().wire())

    assert (
        refused.observation["error"]["code"] == "BAD_REQUEST"
        and said in refused.observation["error"]["message"]
    )
    assert not refused.done and listed.observation["turn"] == 1


def test_only_end_turn_names_a_group(serve: Serve, connect: Connect, tmp_path: Path):
    server = serve(build_app(judged_bundle(tmp_path, "http://127.0.0.1:9/v1")))
    player = connect(server.url)
    started = player.reset(split="train", index=0)

    refused = player.step(
        {
            "kind": "call_tool",
            "tool": "put_book",
            "arguments": {"title": "Dune"},
            "metadata": {"group": {"key": "g", "size": 2}},
        }
    )

    assert started.observation["judged_in_groups"] is False
    assert "only end_turn takes metadata.group" in refused.observation["error"]["message"]
