"""Deadlines: a call past its deadline answers at once with an error, and its episode is torn down after.

Every held step here waits on a gate the test never releases (or releases only after the answer):
without the server's deadline handling, or with replies that wait for the teardown, these tests
hang until the client's own timeout and fail.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from agent_env import Tool
from agent_env._episode import EpisodeState
from agent_env.openenv import AgentEnvAction
from agent_env.testing import FakeTask, Gate, calls
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate, list_crates

pytestmark = pytest.mark.needs("openenv_installed")

CLIENT_TIMEOUT_S = 10.0


def test_a_reset_held_before_its_first_turn_answers_at_its_deadline_before_its_episode_is_torn_down(
    serve: Serve, connect: Connect
) -> None:
    deploy, teardown = Gate(), Gate()
    task = FakeTask("held-deploy", tools=[add_crate], deploy_gate=deploy, teardown_gate=teardown)
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)

    answer = client.reset(split="train", index=0, timeout_s=0.5)

    error = answer.observation["error"]
    assert error["code"] == "DEADLINE_EXCEEDED"
    assert error["call"] == "reset train/0"
    assert "missed its deadline of 0.5 s" in error["message"]
    assert answer.done is True and answer.reward is None
    assert task.episodes[0].state is not EpisodeState.TORN_DOWN
    deploy.release()  # the teardown waits for the env the deploy was still making, then closes it
    assert teardown.wait_reached()
    teardown.release()
    assert task.wait_all_torn_down()


def test_an_end_turn_held_before_its_score_answers_at_its_deadline_before_its_episode_is_torn_down(
    serve: Serve, connect: Connect
) -> None:
    verify, teardown = Gate(), Gate()
    task = FakeTask("held-verify", tools=[add_crate], verify_gate=verify, teardown_gate=teardown)
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    client.reset(split="train", index=0, timeout_s=5)

    answer = client.step(AgentEnvAction.end_turn("done", timeout_s=0.5).wire())

    error = answer.observation["error"]
    assert error["code"] == "DEADLINE_EXCEEDED"
    assert error["call"] == "end_turn"
    assert answer.done is True and answer.reward is None
    assert verify.reached.is_set() and not verify.passed.is_set()
    assert task.episodes[0].state is not EpisodeState.TORN_DOWN
    teardown.release()
    assert task.wait_all_torn_down()


def test_a_tool_that_misses_its_deadline_answers_at_once_and_its_episode_is_torn_down_after(
    serve: Serve, connect: Connect
) -> None:
    crane, teardown = Gate(), Gate()
    task = FakeTask("held-tool", tools=[add_crate], tool_gates={"add_crate": crane}, teardown_gate=teardown)
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    client.reset(split="train", index=0, timeout_s=5)

    answer = client.step(
        AgentEnvAction.call_tool("add_crate", {"crate": "C1", "bay": 2}, timeout_s=0.5).wire()
    )

    error = answer.observation["error"]
    assert error["code"] == "DEADLINE_EXCEEDED"
    assert error["call"] == "call_tool add_crate"
    assert "call_tool add_crate missed its deadline of 0.5 s" in error["message"]
    assert answer.done is True
    assert task.episodes[0].state is not EpisodeState.TORN_DOWN
    teardown.release()
    assert task.wait_all_torn_down()


def test_after_a_missed_deadline_the_episode_takes_no_more_calls_and_the_session_plays_the_next_one(
    serve: Serve, connect: Connect
) -> None:
    crane = Gate()
    held = FakeTask("held-tool", tools=[add_crate], tool_gates={"add_crate": crane})
    free = FakeTask("free", tools=[add_crate], score=1.0)
    client = connect(serve({"train": [held, free]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    client.reset(split="train", index=0)
    client.step(AgentEnvAction.call_tool("add_crate", {"crate": "C1", "bay": 2}, timeout_s=0.3).wire())

    late = client.step(AgentEnvAction.call_tool("add_crate", {"crate": "C2", "bay": 3}).wire())
    again = client.reset(split="train", index=1)
    played = client.step(AgentEnvAction.call_tool("add_crate", {"crate": "C3", "bay": 1}).wire())
    scored = client.step(AgentEnvAction.end_turn("done").wire())

    assert late.observation["error"]["code"] == "NO_OPEN_TURN"
    assert "DEADLINE_EXCEEDED" in late.observation["error"]["message"]
    assert again.observation["error"] is None and again.observation["task_id"] == "free"
    assert played.observation["result"] == "stored dry crate C3 in bay 1"
    assert (scored.done, scored.reward) == (True, 1.0)
    assert held.wait_all_torn_down() and free.wait_all_torn_down()


def test_without_a_deadline_a_slow_tool_is_waited_for_and_its_episode_goes_on(
    serve: Serve, connect: Connect
) -> None:
    crane = Gate()
    task = FakeTask("slow-tool", tools=[add_crate, list_crates], tool_gates={"add_crate": crane})
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    client.reset(split="train", index=0)
    answers: list[Any] = []
    caller = threading.Thread(
        target=lambda: answers.append(
            client.step(AgentEnvAction.call_tool("add_crate", {"crate": "C1", "bay": 2}).wire())
        )
    )

    caller.start()
    assert crane.wait_reached()
    crane.release()
    caller.join(CLIENT_TIMEOUT_S)
    listed = client.step(AgentEnvAction.call_tool("list_crates").wire())

    assert answers[0].observation["result"] == "stored dry crate C1 in bay 2"
    assert answers[0].observation["error"] is None and answers[0].done is False
    assert listed.observation["result"] == "C1 in bay 2"


def test_a_deadline_that_is_not_a_positive_number_is_refused_and_the_turn_stays_open(
    serve: Serve, connect: Connect
) -> None:
    task = FakeTask("deadline-typo", tools=[add_crate])
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    client.reset(split="train", index=0)
    arguments = {"crate": "C1", "bay": 2}

    refused = [
        client.step(
            {"kind": "call_tool", "tool": "add_crate", "arguments": arguments, "metadata": {"timeout_s": bad}}
        )
        for bad in (-1, 0, "soon", True)
    ]
    good = client.step(AgentEnvAction.call_tool("add_crate", arguments, timeout_s=5).wire())

    assert [r.observation["error"]["code"] for r in refused] == ["BAD_REQUEST"] * 4
    assert (
        "metadata.timeout_s must be a number of seconds > 0, got -1"
        in refused[0].observation["error"]["message"]
    )
    assert calls(task.episodes[0]) == [("add_crate", arguments)]
    assert good.observation["result"] == "stored dry crate C1 in bay 2"


# A tool's own deadline


async def lift(crate: str) -> str:
    """Lift a crate with the slow crane: five seconds a lift.

    Args:
        crate: The crate's label.
    """
    await asyncio.sleep(5)
    return f"lifted {crate}"


def slow_crane(**options: Any) -> FakeTask:
    """A task whose `lift` declares a deadline of 0.2 s and takes 5 s; `options` are FakeTask's."""
    return FakeTask("slow-crane", tools=[Tool.from_function(lift, timeout_s=0.2), add_crate], **options)


def test_a_tool_past_its_own_deadline_is_cut_off_there_though_the_client_gives_more_and_the_error_says_so(
    serve: Serve, connect: Connect
) -> None:
    task = slow_crane()
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    reset = client.reset(split="train", index=0, timeout_s=5)

    started = time.monotonic()
    answer = client.step(AgentEnvAction.call_tool("lift", {"crate": "C1"}, timeout_s=60).wire())

    assert reset.observation["tool_timeouts"] == {"lift": 0.2}
    error = answer.observation["error"]
    assert error["code"] == "DEADLINE_EXCEEDED" and answer.done is True
    assert error["message"] == (
        "call_tool lift missed its deadline of 0.2 s (the tool's own: raise its @tool(timeout_s=...) to "
        "give it longer; the client's was 60 s): the episode of task 'slow-crane' ended and is torn down"
    )
    assert time.monotonic() - started < 4  # well before the lift's 5 s: the tool's deadline cut it off
    assert task.wait_all_torn_down()


def test_a_client_deadline_smaller_than_the_tool_s_own_still_cuts_the_call_off_and_the_error_says_whose(
    serve: Serve, connect: Connect
) -> None:
    crane = Gate()
    task = FakeTask(
        "held-crane", tools=[Tool.from_function(add_crate, timeout_s=30)], tool_gates={"add_crate": crane}
    )
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    client.reset(split="train", index=0, timeout_s=5)

    answer = client.step(
        AgentEnvAction.call_tool("add_crate", {"crate": "C1", "bay": 2}, timeout_s=0.3).wire()
    )

    error = answer.observation["error"]
    assert error["code"] == "DEADLINE_EXCEEDED" and answer.done is True
    assert error["message"].startswith(
        "call_tool add_crate missed its deadline of 0.3 s (the client's; the tool's own is 30 s)"
    )
    assert task.wait_all_torn_down()


def test_a_call_with_no_deadline_of_the_client_s_runs_under_the_tool_s_own_and_other_tools_under_none(
    serve: Serve, connect: Connect
) -> None:
    task = slow_crane()
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    client.reset(split="train", index=0, timeout_s=5)

    listed = client.step(AgentEnvAction.list_tools().wire())
    stored = client.step(AgentEnvAction.call_tool("add_crate", {"crate": "C1", "bay": 2}).wire())
    lifted = client.step(AgentEnvAction.call_tool("lift", {"crate": "C1"}).wire())

    assert listed.observation["tool_timeouts"] == {"lift": 0.2}
    assert [t["function"]["name"] for t in listed.observation["tools"]] == ["lift", "add_crate"]
    assert stored.observation["result"] == "stored dry crate C1 in bay 2"
    assert lifted.observation["error"]["code"] == "DEADLINE_EXCEEDED"
    assert lifted.observation["error"]["message"].startswith(
        "call_tool lift missed its deadline of 0.2 s (the tool's own: raise its @tool(timeout_s=...) to "
        "give it longer): "
    )
    assert task.wait_all_torn_down()
