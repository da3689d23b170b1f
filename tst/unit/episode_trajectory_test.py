"""An episode's trajectory, read from its events (`trajectory_of`): turns, calls, replies, scores, times."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json

import pytest

from agent_env import Episode, EpisodeError, Trajectory, trajectory_of
from agent_env._contracts.sandbox import CommandResult
from agent_env._verifiers import BashCheck, Verifier
from agent_env.testing import FakeTask
from tst.support.tools import add_crate


def _played(task: FakeTask, *steps: tuple[str, ...]) -> Episode:
    return _play(task.new_episode(), *steps)


def _play(episode: Episode, *steps: tuple[str, ...]) -> Episode:
    async def play() -> None:
        await episode.deploy()
        for step in steps:
            if step[0] == "call":
                with contextlib.suppress(EpisodeError):  # a refused call is part of the trajectory
                    await episode.call_tool(step[1], json.loads(step[2]))
            else:
                await episode.end_turn(step[1])
        await episode.teardown()

    asyncio.run(play())
    return episode


def test_a_scored_episode_s_trajectory_has_every_turn_call_reply_verifier_score_and_time() -> None:
    task = FakeTask("two-turns", tools=[add_crate], turns=("Store C1.", "Now C2."), system_prompt="Be brief.")
    episode = _played(
        task,
        ("call", "add_crate", '{"crate": "C1", "bay": 2}'),
        ("call", "no_such_tool", "{}"),
        ("end", "Stored C1."),
        ("call", "add_crate", '{"crate": "C2", "bay": 3}'),
        ("end", "Stored C2."),
    )

    trajectory = trajectory_of(episode, client="run-7")

    assert trajectory.recorded_by == "server" and trajectory.client == "run-7"
    assert (trajectory.task.split, trajectory.task.index, trajectory.task.id) == ("train", 0, "two-turns")
    assert trajectory.system_prompt == "Be brief."
    assert [(t.turn, t.prompt, t.reply) for t in trajectory.turns] == [
        (1, "Store C1.", "Stored C1."),
        (2, "Now C2.", "Stored C2."),
    ]
    first, unknown = trajectory.turns[0].calls
    assert (first.tool, first.arguments, first.error_code) == ("add_crate", {"crate": "C1", "bay": 2}, None)
    assert first.result is not None and first.seconds is not None
    assert (unknown.tool, unknown.error_code, unknown.result) == ("no_such_tool", "UNKNOWN_TOOL", None)
    assert trajectory.tool_calls == 3 and trajectory.tool_failures == 1
    assert trajectory.score == 1.0 and trajectory.outcome.kind == "scored"
    assert [(v.type, v.weight, v.score) for v in trajectory.verifiers] == [("function", 1.0, 1.0)]
    timings = trajectory.timings
    assert None not in (timings.deploy_s, timings.verify_s, timings.teardown_s, timings.total_s)


def test_a_failed_episode_s_trajectory_says_how_it_failed_and_has_no_score() -> None:
    task = FakeTask("broken", tools=[add_crate], deploy_error=RuntimeError("no dock today"))
    episode = task.new_episode()

    async def play() -> None:
        with pytest.raises(EpisodeError):
            await episode.deploy()
        await episode.teardown()

    asyncio.run(play())
    trajectory = trajectory_of(episode)

    assert trajectory.outcome.kind == "failed" and trajectory.outcome.code == "DEPLOY_FAILED"
    assert "no dock today" in trajectory.outcome.reason
    assert trajectory.score is None and trajectory.turns == [] and trajectory.timings.deploy_s is None


def test_an_episode_given_up_mid_turn_is_abandoned_with_its_open_turn_and_no_reply() -> None:
    episode = _played(FakeTask("left", tools=[add_crate]), ("call", "add_crate", '{"crate": "C1", "bay": 1}'))

    trajectory = trajectory_of(episode)

    assert trajectory.outcome.kind == "abandoned" and trajectory.score is None
    assert [(t.turn, t.reply, len(t.calls)) for t in trajectory.turns] == [(1, None, 1)]


def test_what_each_verifier_said_beside_its_score_is_its_detail_and_left_out_when_it_said_nothing() -> None:
    fake = FakeTask(
        "fetch-tools",
        tools=[add_crate],
        bash_result=lambda command: CommandResult(6, "\x1b[31mcurl: (6) Could not resolve host\x1b[0m\n"),
    )
    task = fake.task_at("train", 0)
    checks = (Verifier(BashCheck(type="bash", command="curl -sSf https://astral.sh")), *task.verifiers)
    episode = fake.new_episode(dataclasses.replace(task, verifiers=checks))
    _play(episode, ("end", "done"))

    trajectory = trajectory_of(episode)
    written = json.loads(trajectory.model_dump_json())["verifiers"]

    assert [(v.type, v.score, v.detail) for v in trajectory.verifiers] == [
        ("bash", 0.0, "curl: (6) Could not resolve host\n[exit code: 6]"),
        ("function", 1.0, ""),
    ]
    assert [sorted(verifier) for verifier in written] == [
        ["detail", "score", "type", "weight"],
        ["name", "score", "type", "weight"],
    ]
    assert Trajectory.model_validate(json.loads(trajectory.model_dump_json())) == trajectory
