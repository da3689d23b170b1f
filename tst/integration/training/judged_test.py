"""A judged task whose agent works in a Docker sandbox, trained as GRPOTrainer drives AgentEnv: on
one server a relative judge reads a GRPO group's rollouts together, their bash calls and results
among what it reads; on a fleet of two servers, where a group's rollouts are on both, each is judged
alone and a warning says so; a judge that fails leaves every rollout of the group unscored."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env.openenv import BackgroundServer, build_app
from agent_env.training.trl import TASK_OVER, AgentEnv, GroupAcrossServersWarning, score_batch
from tst.support.bundles import make_bundle
from tst.support.judge_stand_in import API_KEY, MODEL, JudgeStandIn
from tst.support.serving import Serve

pytestmark = pytest.mark.needs("trl_installed", "judge_installed", "openenv_installed")

KEY_VARIABLE = "JUDGE_TEST_KEY"
NOTE = "note.txt"


def wrote_thanks(transcript: dict[str, Any], low: int, high: int) -> tuple[int, str]:
    """Full marks when a bash call's output says "thanks", half when the reply does, else the least."""
    outputs = [call.get("result", "") for turn in transcript["turns"] for call in turn.get("calls", [])]
    if any("thanks" in output for output in outputs):
        return high, "the note it read back thanks the guest"
    if "thanks" in transcript["turns"][-1].get("reply", ""):
        return (low + high) // 2, "only the reply thanks the guest"
    return low, "nobody is thanked"


def clerk_bundle(root: Path, url: str) -> Path:
    toml = f"""
    [agents.clerk]
    bash = true
    system_prompt = "You keep the front desk's notes."

    [sandbox]
    provider = "docker"
    command_timeout_s = 20

    [judges.note]
    url = "{url}"
    model = "{MODEL}"
    api_key_env = "{KEY_VARIABLE}"
    rubric = "The note the clerk wrote thanks the guest."
    relative = true
    timeout_s = 30
    """
    task = {
        "id": "thank-note",
        "agent": "clerk",
        "turns": ["Write a note to the guest."],
        "verifiers": [{"type": "judge", "judge": "note"}],
    }
    return make_bundle(root, toml=textwrap.dedent(toml), envs={}, tasks={"train": [task]})


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, API_KEY)


@pytest.fixture
def servers(tmp_path: Path, serve: Serve) -> Iterator[tuple[JudgeStandIn, list[str]]]:
    """A stand-in judge, and two servers of the clerk's bundle with Docker sandboxes."""
    stand_in = JudgeStandIn(rule=wrote_thanks)
    root = clerk_bundle(tmp_path / "bundle", f"{serve(stand_in.app).url}/v1")
    started = [BackgroundServer(build_app(root)).start() for _ in range(2)]
    try:
        yield stand_in, [server.url for server in started]
    finally:
        for server in started:
            server.stop()


def rollouts(env: AgentEnv, notes: list[str]) -> list[float | None]:
    """One rollout per note, as GRPOTrainer plays a group: each resets, writes its note and reads it
    back with bash, ends its turn; then score_batch with the batch's environments, then each reward."""
    environments = [env.factory() for _ in notes]
    for environment in environments:
        environment.reset(**env.dataset[0])
    for environment, note in zip(environments, notes, strict=True):
        environment.bash(command=f"printf '%s' '{note}' > {NOTE} && cat {NOTE}")
        assert environment.end_turn(reply="Done.") == TASK_OVER
    score_batch([[]] * len(notes), environments=environments)
    return [environment.get_reward() for environment in environments]


def test_on_one_server_a_group_working_in_docker_is_judged_together_from_its_bash_calls(
    servers: tuple[JudgeStandIn, list[str]],
) -> None:
    stand_in, urls = servers
    env = AgentEnv(urls[0])
    try:
        rewards = rollouts(env, ["Welcome, and thanks!", "Welcome.", "Checkout is at noon."])
    finally:
        env.close()

    assert rewards == [1.0, 0.0, 0.0]
    assert stand_in.groups == [3] and len(stand_in.requests) == 1
    [data] = stand_in.transcripts
    results = {entry["transcript"]["turns"][0]["calls"][0]["result"] for entry in data["transcripts"]}
    assert results == {
        f"{note}\n[exit code: 0]" for note in ("Welcome, and thanks!", "Welcome.", "Checkout is at noon.")
    }


def test_a_group_whose_rollouts_are_on_two_servers_of_a_fleet_is_judged_alone_with_a_warning(
    servers: tuple[JudgeStandIn, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in, urls = servers
    monkeypatch.setattr("agent_env.training.trl._batch._warned_across", False)
    env = AgentEnv(urls)
    try:
        with pytest.warns(GroupAcrossServersWarning, match="on 2 servers"):
            rewards = rollouts(env, ["Welcome, and thanks!", "Welcome."])
    finally:
        env.close()

    assert rewards == [1.0, 0.0]
    assert stand_in.groups == [] and len(stand_in.requests) == 2


def test_a_judge_that_fails_leaves_every_rollout_of_the_group_unscored(
    servers: tuple[JudgeStandIn, list[str]],
) -> None:
    stand_in, urls = servers
    stand_in.status = 401
    env = AgentEnv(urls[0])
    try:
        rewards = rollouts(env, ["Welcome, and thanks!", "Welcome."])
    finally:
        env.close()

    assert rewards == [None, None]
    assert len(stand_in.requests) == 1
