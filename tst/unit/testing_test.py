"""The fakes: real tasks whose steps are scripted, served as a bundle's are, and gates."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from agent_env import (
    BASH_TOOL,
    AccessChange,
    CommandResult,
    EpisodeError,
    EpisodeState,
    TaskSpec,
    Tool,
    ToolsetSpec,
    TurnResult,
    VerifierSummary,
)
from agent_env._contexts import VerifierContext
from agent_env._contracts.sandbox import DEFAULT_COMMAND_TIMEOUT_S, KILL_MARGIN_S
from agent_env._episode import Episode
from agent_env.testing import FakeTask, Gate, Score, calls, fake_served
from tst.support.waiting import until

WAIT_S = 5.0


def weigh(crate: str, times: int = 1) -> str:
    """Weigh a crate on the dock's scales.

    Args:
        crate: The crate's label.
        times: How many times to weigh it.
    """
    return f"{crate}: {40 * times} kg"


def tip_over(crate: str) -> str:
    """Tip a crate over.

    Args:
        crate: The crate's label.
    """
    raise ValueError(f"crate {crate} is bolted down")


def error_of(call: Coroutine[Any, Any, Any]) -> EpisodeError:
    async def main() -> None:
        await call

    with pytest.raises(EpisodeError) as caught:
        asyncio.run(main())
    return caught.value


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop on a thread of its own, as the server runs its episodes."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-server-loop", daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(WAIT_S)
    loop.close()


def on(loop: asyncio.AbstractEventLoop, call: Coroutine[Any, Any, Any]) -> Future[Any]:
    return asyncio.run_coroutine_threadsafe(call, loop)


# Specs


def test_fake_tasks_are_served_with_specs_giving_split_index_prompt_turns_and_toolset():
    weighing = FakeTask(
        "weigh", tools=[weigh], turns=("Weigh C12.", "Now C13."), system_prompt="You are a clerk."
    )
    filing = FakeTask(
        "file",
        envs=("dock", "ledger"),
        role="clerk",
        access=(AccessChange(action="disable", role="clerk", tools=("erase",)),),
        bash=True,
    )

    served = fake_served({"train": [weighing, filing], "eval": [filing]})

    assert [task.spec for task in served["train"]] == [
        TaskSpec(
            id="weigh",
            split="train",
            index=0,
            prompt=[
                {"role": "system", "content": "You are a clerk."},
                {"role": "user", "content": "Weigh C12."},
            ],
            turns=2,
            max_turns=2,
            toolset=ToolsetSpec(
                name="fake", envs=("fake",), role="default", tools=(Tool.from_function(weigh).schema,)
            ),
            verifiers=(VerifierSummary(type="function", weight=1.0),),
        ),
        TaskSpec(
            id="file",
            split="train",
            index=1,
            prompt=[{"role": "user", "content": "Do the task."}],
            turns=1,
            max_turns=1,
            toolset=ToolsetSpec(
                name="dock+ledger+bash@clerk[-erase]",
                envs=("dock", "ledger"),
                role="clerk",
                access=filing.access,
                bash=True,
                tools=(BASH_TOOL,),
                tool_timeouts={"bash": DEFAULT_COMMAND_TIMEOUT_S + KILL_MARGIN_S},
            ),
            verifiers=(VerifierSummary(type="function", weight=1.0),),
        ),
    ]
    assert (served["eval"][0].spec.split, served["eval"][0].spec.index) == ("eval", 0)


def test_each_served_fake_task_makes_a_fresh_episode_and_records_it():
    task = FakeTask("weigh", tools=[weigh])
    served = fake_served({"train": [task]})

    episodes = [served["train"][0].new_episode() for _ in range(2)]

    assert all(isinstance(episode, Episode) for episode in episodes)
    assert episodes[0] is not episodes[1]
    assert task.episodes == episodes


# Scripted answers


def test_a_scripted_tool_answers_with_its_function_s_result_and_its_schema_is_the_real_one():
    episode = FakeTask("weigh", tools=[weigh]).new_episode()

    async def main() -> str:
        await episode.deploy()
        return await episode.call_tool("weigh", {"crate": "C12", "times": 2})

    answer = asyncio.run(main())

    assert answer == "C12: 80 kg"
    assert episode.tools == [Tool.from_function(weigh).schema]
    assert calls(episode) == [("weigh", {"crate": "C12", "times": 2})]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"times": 2}, "weigh: argument 'crate' is required"),
        ({"crate": "C12", "times": "twice"}, "weigh: argument 'times': Input should be a valid integer"),
        ({"crate": "C12", "scale": "big"}, "weigh: argument 'scale' is unknown (arguments: crate, times)"),
    ],
)
def test_a_scripted_tool_s_arguments_are_validated_by_its_real_schema(
    arguments: dict[str, Any], problem: str
):
    episode = FakeTask("weigh", tools=[weigh]).new_episode()
    asyncio.run(episode.deploy())

    error = error_of(episode.call_tool("weigh", arguments))

    assert error.code == "INVALID_ARGUMENTS"
    assert error.message.startswith(problem)


def test_a_scripted_tool_that_raises_answers_with_tool_error():
    episode = FakeTask("tip", tools=[tip_over]).new_episode()
    asyncio.run(episode.deploy())

    error = error_of(episode.call_tool("tip_over", {"crate": "C12"}))

    assert (error.code, error.message) == (
        "TOOL_ERROR",
        "tip_over failed: ValueError: crate C12 is bolted down",
    )


def test_a_fake_task_with_bash_offers_bash_last_and_answers_with_its_scripted_result():
    episode = FakeTask(
        "shell", tools=[weigh], bash=True, bash_result=lambda command: CommandResult(0, f"ran {command}")
    ).new_episode()

    async def main() -> str:
        await episode.deploy()
        return await episode.call_tool("bash", {"command": "ls"})

    answer = asyncio.run(main())

    assert answer == "ran ls\n[exit code: 0]"
    assert [tool["function"]["name"] for tool in episode.tools] == ["weigh", "bash"]
    assert episode.tools[-1] == BASH_TOOL


def weighed_c12(context: VerifierContext) -> float:
    return 1.0 if ("weigh", {"crate": "C12"}) in calls(context) else 0.0


@pytest.mark.parametrize(
    ("score", "calls", "expected"),
    [(0.25, [], 0.25), (weighed_c12, [{"crate": "C12"}], 1.0), (weighed_c12, [{"crate": "C13"}], 0.0)],
    ids=["a number", "a function of the calls, met", "a function of the calls, missed"],
)
def test_the_scripted_score_comes_back_on_the_last_end_turn(
    score: Score, calls: list[dict[str, Any]], expected: float
):
    episode = FakeTask(
        "weigh", tools=[weigh], turns=("Weigh a crate.", "Say done."), score=score
    ).new_episode()

    async def main() -> tuple[TurnResult, TurnResult]:
        await episode.deploy()
        for arguments in calls:
            await episode.call_tool("weigh", arguments)
        return await episode.end_turn("Weighed."), await episode.end_turn("Done.")

    first, last = asyncio.run(main())

    assert first == TurnResult(done=False, turn=2, prompt="Say done.")
    assert last == TurnResult(done=True, turn=2, score=expected, verifier_scores=(expected,))


def test_a_fake_task_with_a_deploy_error_fails_its_deploy_with_deploy_failed():
    episode = FakeTask("stuck", deploy_error=RuntimeError("no berth free")).new_episode()

    error = error_of(episode.deploy())

    assert (error.code, error.message) == (
        "DEPLOY_FAILED",
        "deploy of task 'stuck' failed: RuntimeError: no berth free",
    )


@pytest.mark.parametrize("when", ["before deploy", "after the score"])
def test_a_fake_task_s_episode_refuses_calls_with_no_open_turn_by_the_core_s_own_rule(when: str):
    episode = FakeTask("weigh", tools=[weigh]).new_episode()

    async def score() -> None:
        await episode.deploy()
        await episode.end_turn("Done.")

    if when == "after the score":
        asyncio.run(score())

    error = error_of(episode.call_tool("weigh", {"crate": "C12"}))

    assert error.code == "NO_OPEN_TURN"


# Gates, with the episode on a loop of its own as the server runs it


@pytest.mark.parametrize("step", ["deploy", "tool", "verify", "teardown"])
def test_a_gate_holds_its_step_until_the_test_releases_it(step: str, loop: asyncio.AbstractEventLoop):
    gate = Gate()
    gates: dict[str, dict[str, Any]] = {
        "deploy": {"deploy_gate": gate},
        "tool": {"tool_gates": {"weigh": gate}},
        "verify": {"verify_gate": gate},
        "teardown": {"teardown_gate": gate},
    }
    task = FakeTask("gated", tools=[weigh], turns=("Weigh C12.",), score=0.5, **gates[step])
    episode = task.new_episode()
    steps: dict[str, Callable[[], Coroutine[Any, Any, Any]]] = {
        "deploy": episode.deploy,
        "tool": lambda: episode.call_tool("weigh", {"crate": "C12"}),
        "verify": lambda: episode.end_turn("Weighed."),
        "teardown": episode.teardown,
    }
    if step != "deploy":
        on(loop, episode.deploy()).result(WAIT_S)

    held = on(loop, steps[step]())
    assert gate.wait_reached(WAIT_S)
    held_while_closed = not held.done() and not gate.passed.is_set()
    gate.release()
    answer = held.result(WAIT_S)

    assert held_while_closed
    assert gate.passed.is_set()
    expected = {
        "deploy": "Weigh C12.",
        "tool": "C12: 40 kg",
        "verify": TurnResult(done=True, turn=1, score=0.5, verifier_scores=(0.5,)),
        "teardown": None,
    }
    assert answer == expected[step]


def test_live_lists_the_episodes_deployed_or_deploying_and_not_yet_torn_down(loop: asyncio.AbstractEventLoop):
    gate = Gate(held=False)
    task = FakeTask("weigh", tools=[weigh], deploy_gate=gate)
    _never_deployed, finished, open_turn, deploying = (task.new_episode() for _ in range(4))
    on(loop, finished.deploy()).result(WAIT_S)
    on(loop, finished.teardown()).result(WAIT_S)
    on(loop, open_turn.deploy()).result(WAIT_S)
    gate.hold()
    held = on(loop, deploying.deploy())
    assert until(lambda: deploying.state is EpisodeState.DEPLOYING, WAIT_S)

    live = task.live

    gate.release()
    held.result(WAIT_S)
    assert live == [open_turn, deploying]


def test_wait_all_torn_down_tells_whether_every_begun_episode_is_torn_down_within_its_timeout(
    loop: asyncio.AbstractEventLoop,
):
    gate = Gate()
    task = FakeTask("weigh", tools=[weigh], teardown_gate=gate)
    episode, _never_deployed = task.new_episode(), task.new_episode()
    on(loop, episode.deploy()).result(WAIT_S)
    tearing_down = on(loop, episode.teardown())
    assert gate.wait_reached(WAIT_S)

    while_held = task.wait_all_torn_down(timeout_s=0.05)
    gate.release()
    once_released = task.wait_all_torn_down(timeout_s=WAIT_S)

    assert (while_held, once_released) == (False, True)
    tearing_down.result(WAIT_S)
    assert task.live == []
