"""Episodes of the example bundle: deploy, turns, tools, bash, scoring, and a teardown that always runs."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import agent_env
from agent_env import (
    CommandResult,
    Env,
    EnvDefinition,
    Episode,
    EpisodeError,
    EpisodeState,
    LocalSandboxProvider,
    Task,
    load_solutions,
    replay,
)
from agent_env._verifiers import FunctionCheck, Verifier
from agent_env.sandbox import LocalSandbox
from tst.support.waiting import WAIT_S, eventually, running, written
from tst.support.wharf import WHARF, example, with_envs

BUNDLE = agent_env.load_bundle(WHARF)
AWK_TOTAL = "awk -F, 'NR>1 {s += $2} END {print s}' manifest.csv > total.txt"


def error_of(call: Any) -> EpisodeError:
    """The EpisodeError that awaiting `call` raises."""

    async def main() -> None:
        await call

    with pytest.raises(EpisodeError) as caught:
        asyncio.run(main())
    return caught.value


def logbook(
    name: str, log: list[str], *, setup_error: Exception | None = None, close_error: Exception | None = None
) -> EnvDefinition:
    """An env, without tools, that writes what happens to its instance into `log`."""

    class Logbook(Env):
        def setup(self, seed: Mapping[str, Any]) -> None:
            log.append(f"{name} set up")
            if setup_error is not None:
                raise setup_error

        def close(self) -> None:
            log.append(f"{name} closed")
            if close_error is not None:
                raise close_error

    return EnvDefinition.from_class(name, Logbook)


class CountedSandbox:
    """A local sandbox that counts its teardowns."""

    def __init__(self, inner: LocalSandbox) -> None:
        self.inner = inner
        self.root = inner.root
        self.teardowns = 0

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        return await self.inner.run(command, timeout_s=timeout_s, max_output_bytes=max_output_bytes)

    async def seal(self) -> None:
        await self.inner.seal()

    async def teardown(self) -> None:
        self.teardowns += 1
        await self.inner.teardown()


class Sandboxes:
    """Local sandboxes under `parent`, counted; `held` holds each creation until `release` is set."""

    name = "counted"

    def __init__(self, parent: Path, *, held: bool = False) -> None:
        self._local = LocalSandboxProvider(parent)
        self.made: list[CountedSandbox] = []
        self.reached = asyncio.Event()
        self.release = asyncio.Event()
        if not held:
            self.release.set()

    async def create(self, files: Mapping[str, bytes]) -> CountedSandbox:
        self.reached.set()
        await self.release.wait()
        sandbox = CountedSandbox(await self._local.create(files))
        self.made.append(sandbox)
        return sandbox


# Turns and tools


def test_deploy_opens_the_first_turn_and_answers_with_its_prompt():
    task = example("store-crate-000")
    episode = Episode(task)

    prompt = asyncio.run(episode.deploy())

    assert prompt == task.turns[0]
    assert (episode.state, episode.turn) == (EpisodeState.TURN_OPEN, 1)


def test_a_tool_call_changes_the_env_s_state_and_answers_with_its_rendered_result():
    episode = Episode(example("store-crate-000"))

    async def main() -> tuple[str, str]:
        await episode.deploy()
        stored = await episode.call_tool("add_crate", {"crate": "C99", "bay": 6, "kind": "cold"})
        return stored, await episode.call_tool("list_crates", {"bay": 6})

    stored, bay_6 = asyncio.run(main())

    assert stored == "crate C99 (cold) stored in bay 6"
    assert bay_6 == '[{"crate": "C99", "bay": 6, "kind": "cold"}]'


def deployed(task: Task) -> Episode:
    episode = Episode(task)
    asyncio.run(episode.deploy())
    return episode


@pytest.mark.parametrize("name", ["paint_crate", "bash"])
def test_an_unknown_tool_is_refused_with_the_list_of_tools(name: str):
    episode = deployed(example("store-crate-000"))

    error = error_of(episode.call_tool(name, {}))

    assert error.code == "UNKNOWN_TOOL"
    assert error.message == f"unknown tool '{name}' (tools: add_crate, move_crate, list_crates)"


def test_a_misspelt_tool_is_refused_with_the_nearest_name_and_the_list_of_tools():
    episode = deployed(example("store-crate-000"))

    error = error_of(episode.call_tool("add_crates", {}))

    assert error.code == "UNKNOWN_TOOL"
    assert error.message == (
        "unknown tool 'add_crates'; did you mean 'add_crate'? (tools: add_crate, move_crate, list_crates)"
    )


def test_a_tool_limited_to_another_role_is_not_allowed_without_the_task_s_access_change():
    episode = deployed(example("store-crate-000"))

    error = error_of(episode.call_tool("remove_crate", {"crate": "C29"}))

    assert error.code == "TOOL_NOT_ALLOWED"
    assert "not available to role 'default'" in error.message


def test_arguments_that_fail_the_tool_s_schema_are_refused_naming_the_bad_one():
    episode = deployed(example("move-crate-000"))

    error = error_of(episode.call_tool("move_crate", {"crate": "C18", "to_bay": 9}))

    assert error.code == "INVALID_ARGUMENTS"
    assert error.message.startswith("move_crate: argument 'to_bay': Input should be less than or equal to 6")


def test_a_tool_that_raises_answers_with_its_message_and_the_episode_goes_on():
    episode = deployed(example("move-crate-000"))

    error = error_of(episode.call_tool("move_crate", {"crate": "C00", "to_bay": 1}))

    assert error.code == "TOOL_ERROR"
    assert error.message == "move_crate failed: ValueError: there is no crate C00 on the dock"
    assert (
        asyncio.run(episode.call_tool("move_crate", {"crate": "C18", "to_bay": 1}))
        == "crate C18 moved to bay 1"
    )
    assert asyncio.run(episode.end_turn("Done.")).score == 1.0


def scored(task: Task) -> Episode:
    episode = deployed(task)
    asyncio.run(episode.end_turn(""))
    return episode


@pytest.mark.parametrize("when", ["before deploy", "after the score"])
@pytest.mark.parametrize("call", ["call_tool", "end_turn"])
def test_a_call_with_no_open_turn_is_refused(when: str, call: str):
    task = example("count-bay-000")
    episode = Episode(task) if when == "before deploy" else scored(task)

    error = error_of(episode.call_tool("list_crates", {}) if call == "call_tool" else episode.end_turn("2"))

    assert error.code == "NO_OPEN_TURN"
    where = "is new" if when == "before deploy" else "ended (scored 0)"
    assert error.message == f"no turn is open: the episode of task 'count-bay-000' {where}"


def test_a_two_turn_task_answers_its_first_end_turn_with_the_second_prompt_and_scores_on_the_second():
    task = example("store-then-move-000")
    episode = Episode(task)

    async def main() -> tuple[agent_env.TurnResult, agent_env.TurnResult]:
        await episode.deploy()
        await episode.call_tool("add_crate", {"crate": "C16", "bay": 2, "kind": "dry"})
        first = await episode.end_turn("Stored.")
        await episode.call_tool("move_crate", {"crate": "C16", "to_bay": 6})
        return first, await episode.end_turn("Moved.")

    first, second = asyncio.run(main())

    assert first == agent_env.TurnResult(done=False, turn=2, prompt=task.turns[1])
    assert second == agent_env.TurnResult(done=True, turn=2, score=1.0, verifier_scores=(1.0,))
    assert episode.replies == ["Stored.", "Moved."]


# Bash


def test_a_bash_task_runs_bash_in_its_sandbox_and_its_bash_verifier_scores_the_result(tmp_path: Path):
    task = example("manifest-total-000")
    episode = Episode(task, provider=LocalSandboxProvider(tmp_path))

    async def main() -> tuple[str, agent_env.TurnResult]:
        await episode.deploy()
        listing = await episode.call_tool("bash", {"command": "cat manifest.csv"})
        await episode.call_tool("bash", {"command": AWK_TOTAL})
        try:
            return listing, await episode.end_turn("Written.")
        finally:
            await episode.teardown()

    listing, end = asyncio.run(main())

    assert task.toolset.name == "dock+bash"
    assert listing == task.files["manifest.csv"].decode() + "\n[exit code: 0]"
    assert (end.score, end.verifier_scores) == (1.0, (1.0,))


def test_a_bash_verifier_runs_after_the_agents_shell_is_gone_and_code_it_planted_for_python_does_not_run(
    tmp_path: Path,
):
    import os
    import sys

    from agent_env._verifiers import BashCheck

    python = os.path.realpath(sys.executable)  # outside the virtualenv: Python's user site is on
    site = f".local/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    check = f'{python} -c \'import sys; sys.exit(open("total.txt").read().strip() != "205")\''
    task = dataclasses.replace(
        example("manifest-total-000"), verifiers=(Verifier(BashCheck(type="bash", command=check)),)
    )
    plant = f'mkdir -p "$HOME/{site}" && echo "import os; os._exit(0)" > "$HOME/{site}/forge.pth"'

    async def main(command: str) -> agent_env.TurnResult:
        episode = Episode(task, provider=LocalSandboxProvider(tmp_path))
        await episode.deploy()
        try:
            await episode.call_tool("bash", {"command": command})
            return await episode.end_turn("Written.")
        finally:
            await episode.teardown()

    forged = asyncio.run(main(f"echo 999 > total.txt; {plant}"))
    honest = asyncio.run(main(AWK_TOTAL))

    assert (forged.score, honest.score) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({}, "bash: argument 'command' is required"),
        ({"command": 7}, "bash: argument 'command': Input should be a valid string (got 7)"),
        (
            {"command": "ls", "cwd": "/"},
            "bash: argument 'cwd' is unknown (arguments: command); remove it or check its spelling",
        ),
    ],
)
def test_bash_s_arguments_are_checked_as_every_tool_s_are_naming_the_bad_one(
    arguments: dict[str, Any], said: str, tmp_path: Path
):
    episode = Episode(example("manifest-total-000"), provider=LocalSandboxProvider(tmp_path))

    async def main() -> None:
        await episode.deploy()
        try:
            await episode.call_tool("bash", arguments)
        finally:
            await episode.teardown()

    with pytest.raises(EpisodeError) as refused:
        asyncio.run(main())
    error = refused.value

    assert (error.code, error.message) == (agent_env.ErrorCode.INVALID_ARGUMENTS, said)


def test_a_bash_command_past_its_deadline_is_killed_with_its_process_group_and_reported(tmp_path: Path):
    task = example("manifest-total-000")
    quick = dataclasses.replace(
        task, sandbox_settings=task.sandbox_settings.model_copy(update={"command_timeout_s": 0.5})
    )
    episode = Episode(quick, provider=LocalSandboxProvider(tmp_path))

    async def main() -> tuple[str, bool]:
        await episode.deploy()
        try:
            answer = await episode.call_tool("bash", {"command": "sleep 30.31 & sleep 30"})
            assert isinstance(episode.sandbox, LocalSandbox)
            return answer, await eventually(lambda: running("30.31") == [])
        finally:
            await episode.teardown()

    answer, helper_gone = asyncio.run(main())

    assert answer == "[killed: the command ran past its 0.5 s deadline]"
    assert helper_gone
    assert episode.state is EpisodeState.TORN_DOWN


# Teardown


def test_teardown_removes_the_sandbox_folder_and_kills_a_command_still_running(tmp_path: Path):
    episode = Episode(example("manifest-total-000"), provider=LocalSandboxProvider(tmp_path))

    async def main() -> tuple[Path, bool]:
        await episode.deploy()
        assert isinstance(episode.sandbox, LocalSandbox)
        root = episode.sandbox.root
        command = "sleep 30.32 & echo started > started.txt; wait"
        calling = asyncio.create_task(episode.call_tool("bash", {"command": command}))
        await written(root / "started.txt")
        assert await eventually(lambda: running("30.32") != [])
        await episode.teardown()
        await asyncio.wait_for(calling, WAIT_S)
        return root, await eventually(lambda: running("30.32") == [])

    root, helper_gone = asyncio.run(main())

    assert not root.exists()
    assert helper_gone
    assert list(tmp_path.iterdir()) == []


def test_teardown_runs_once_however_often_it_is_called_concurrently_too(tmp_path: Path):
    log: list[str] = []
    sandboxes = Sandboxes(tmp_path)
    episode = Episode(with_envs(example("manifest-total-000"), logbook("logbook", log)), provider=sandboxes)

    async def main() -> None:
        await episode.deploy()
        await asyncio.gather(*(episode.teardown() for _ in range(5)))
        await episode.teardown()

    asyncio.run(main())

    assert log == ["logbook set up", "logbook closed"]
    assert [sandbox.teardowns for sandbox in sandboxes.made] == [1]
    assert list(tmp_path.iterdir()) == []


def test_teardown_never_raises_and_still_releases_everything_when_an_env_s_close_raises(tmp_path: Path):
    log: list[str] = []
    broken = logbook("broken", log, close_error=RuntimeError("the lock is rusted"))
    task = with_envs(example("manifest-total-000"), broken, logbook("logbook", log))
    episode = Episode(task, provider=LocalSandboxProvider(tmp_path))

    async def main() -> None:
        await episode.deploy()
        await episode.teardown()

    asyncio.run(main())

    assert log == ["broken set up", "logbook set up", "broken closed", "logbook closed"]
    assert episode.state is EpisodeState.TORN_DOWN
    assert list(tmp_path.iterdir()) == []


def test_a_deploy_that_fails_raises_deploy_failed_and_teardown_still_releases_what_it_made():
    log: list[str] = []
    task = with_envs(
        example("store-crate-000"),
        logbook("logbook", log),
        logbook("broken", log, setup_error=RuntimeError("the tide is out")),
    )
    episode = Episode(task)

    error = error_of(episode.deploy())
    failed_as = episode.state
    asyncio.run(episode.teardown())

    assert error.code == "DEPLOY_FAILED"
    assert error.message == "deploy of task 'store-crate-000' failed: RuntimeError: the tide is out"
    assert failed_as is EpisodeState.FAILED
    assert log == ["logbook set up", "broken set up", "logbook closed", "broken closed"]


def test_a_verifier_that_raises_fails_the_episode_naming_its_function_and_line_its_traceback_logged(
    caplog: pytest.LogCaptureFixture,
):
    def broken_scales(context: agent_env.VerifierContext) -> float:
        raise RuntimeError("the scales are broken")

    line = broken_scales.__code__.co_firstlineno + 1
    verifier = Verifier(FunctionCheck(type="function", function="broken_scales"), broken_scales)
    episode = deployed(dataclasses.replace(example("store-crate-000"), verifiers=(verifier,)))

    with caplog.at_level(logging.ERROR, logger="agent_env._episode"):
        error = error_of(episode.end_turn("Stored."))

    assert error.code == "VERIFIER_FAILED"
    assert error.message == (
        f"verifiers[0] of task 'store-crate-000', function 'broken_scales' (episode_test.py:{line}), failed: "
        "RuntimeError: the scales are broken"
    )
    assert (episode.state, episode.score) == (EpisodeState.FAILED, None)
    logged = caplog.records[-1]
    assert logged.exc_info is not None and "the scales are broken" in caplog.text
    assert 'raise RuntimeError("the scales are broken")' in caplog.text


def test_teardown_while_a_deploy_makes_the_sandbox_still_removes_the_sandbox(tmp_path: Path):
    sandboxes = Sandboxes(tmp_path, held=True)
    episode = Episode(example("manifest-total-000"), provider=sandboxes)

    async def main() -> EpisodeError:
        deploying = asyncio.create_task(episode.deploy())
        await asyncio.wait_for(sandboxes.reached.wait(), WAIT_S)
        tearing_down = asyncio.create_task(episode.teardown())
        assert await eventually(lambda: episode.state is EpisodeState.TEARING_DOWN)
        sandboxes.release.set()
        await asyncio.wait_for(tearing_down, WAIT_S)
        with pytest.raises(EpisodeError) as caught:
            await asyncio.wait_for(deploying, WAIT_S)
        return caught.value

    error = asyncio.run(main())

    assert error.code == "TORN_DOWN"
    assert [sandbox.teardowns for sandbox in sandboxes.made] == [1]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("held_in", ["constructor", "setup"])
def test_teardown_while_a_deploy_makes_an_env_closes_that_env_once_it_is_made(held_in: str):
    log: list[str] = []
    reached, release = threading.Event(), threading.Event()

    def hold(step: str) -> None:
        if step == held_in:
            reached.set()
            release.wait(WAIT_S)

    class Slow(Env):
        def __init__(self) -> None:
            hold("constructor")
            log.append("made")

        def setup(self, seed: Mapping[str, Any]) -> None:
            hold("setup")
            log.append("set up")

        def close(self) -> None:
            log.append("closed")

    episode = Episode(with_envs(example("store-crate-000"), EnvDefinition.from_class("slow", Slow)))

    async def main() -> list[str]:
        deploying = asyncio.create_task(episode.deploy())
        assert await asyncio.to_thread(reached.wait, WAIT_S)
        tearing_down = asyncio.create_task(episode.teardown())
        assert await eventually(lambda: episode.state is EpisodeState.TEARING_DOWN)
        release.set()
        await asyncio.wait_for(tearing_down, WAIT_S)
        at_teardown = list(log)
        with pytest.raises(EpisodeError):
            await asyncio.wait_for(deploying, WAIT_S)
        return at_teardown

    at_teardown = asyncio.run(main())

    made = ["made"] if held_in == "constructor" else ["made", "set up"]
    assert at_teardown == [*made, "closed"]
    assert log == at_teardown


# The example bundle, task by task

EXAMPLE_TASKS = [(split, task.id) for split, tasks in BUNDLE.splits.items() for task in tasks]


@pytest.mark.parametrize(("split", "task_id"), EXAMPLE_TASKS, ids=[f"{s}/{t}" for s, t in EXAMPLE_TASKS])
def test_every_example_task_scores_1_for_its_reference_play_and_0_for_a_play_that_does_nothing(
    split: str, task_id: str, tmp_path: Path
):
    task = example(task_id)
    reference = load_solutions(BUNDLE, split)[task_id].turns
    sandboxes = LocalSandboxProvider(tmp_path)

    async def main() -> tuple[agent_env.ReplayResult, agent_env.ReplayResult]:
        solved = await replay(Episode(task, provider=sandboxes), reference)
        return solved, await replay(Episode(task, provider=sandboxes), [])

    solved, idle = asyncio.run(main())

    assert (solved.score, solved.error) == (1.0, None), "\n".join(solved.transcript)
    assert not [line for line in solved.transcript if " -> error: " in line]
    assert (idle.score, idle.error) == (0.0, None)
    assert list(tmp_path.iterdir()) == []


def test_teardown_runs_an_env_s_own_sync_close_on_a_thread_of_its_own_and_skips_env_s_empty_one(
    monkeypatch: pytest.MonkeyPatch,
):
    log: list[str] = []
    threads: list[str] = []
    real = agent_env._episode.run_in_own_thread

    async def recorded(fn: Any) -> Any:
        threads.append(getattr(fn, "__qualname__", repr(fn)))
        return await real(fn)

    monkeypatch.setattr(agent_env._episode, "run_in_own_thread", recorded)

    class Plain(Env):
        """An env that keeps Env's own close, which releases nothing."""

    episode = Episode(
        with_envs(
            example("store-crate-000"), logbook("logbook", log), EnvDefinition.from_class("plain", Plain)
        )
    )

    async def main() -> None:
        await episode.deploy()
        await episode.teardown()

    asyncio.run(main())

    assert log == ["logbook set up", "logbook closed"]
    assert [name.rsplit(".", 1)[-1] for name in threads] == ["close"]
    assert episode.state is EpisodeState.TORN_DOWN


def timed(seconds: float) -> Task:
    """The wharf's bash task with a time limit, scored 1 when its sandbox holds `state`."""
    from agent_env._verifiers import BashCheck

    return dataclasses.replace(
        example("manifest-total-000"),
        verifiers=(Verifier(BashCheck(type="bash", command="test -f state")),),
        time_limit_s=seconds,
    )


def test_a_command_running_when_the_time_limit_runs_out_is_cut_short_and_the_episode_scored_as_it_stands():
    async def main() -> tuple[str, float, Any, EpisodeError]:
        episode = Episode(timed(1.0), provider="local")
        try:
            await episode.deploy()
            await episode.call_tool("bash", {"command": "touch state"})
            started = asyncio.get_running_loop().time()
            cut = await episode.call_tool("bash", {"command": "sleep 30"})
            seconds = asyncio.get_running_loop().time() - started
            with pytest.raises(EpisodeError) as later:
                await episode.call_tool("bash", {"command": "true"})
            return cut, seconds, episode.final, later.value
        finally:
            await episode.teardown()

    cut, seconds, final, later = asyncio.run(main())

    assert seconds < 5
    assert cut.endswith("[the task's time limit of 1 s ran out: the episode is over]")
    assert final is not None and (final.done, final.score) == (True, 1.0)
    assert later.code == "NO_OPEN_TURN"


def test_a_call_after_the_time_limit_runs_nothing_and_scores_the_episode_as_it_stands():
    async def main() -> tuple[str, Any, list[str]]:
        episode = Episode(timed(0.2), provider="local")
        try:
            await episode.deploy()
            await asyncio.sleep(0.4)
            late = await episode.call_tool("bash", {"command": "touch state"})
            return late, episode.final, [event.kind for event in episode.events]
        finally:
            await episode.teardown()

    late, final, kinds = asyncio.run(main())

    assert late == "[the task's time limit of 0.2 s ran out: the episode is over]"
    assert final is not None and final.score == 0.0
    assert kinds[:3] == ["deployed", "turn_ended", "scored"]
