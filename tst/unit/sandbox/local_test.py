"""The local sandbox: a folder per episode, and bash commands run in it under a deadline and an output cap."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from agent_env import CommandResult
from agent_env.sandbox import LocalSandbox, LocalSandboxProvider
from tst.support.waiting import eventually, running, written
from tst.unit.sandbox._local import DEADLINE_S, ISOLATIONS, in_sandbox, run


def test_the_task_files_are_seeded_into_the_sandbox_folder_nested_paths_too(tmp_path: Path):
    files = {"manifest.csv": b"crate,weight\nC12,40\n", "papers/day1/log.txt": b"calm seas\n"}

    async def read(sandbox: LocalSandbox) -> CommandResult:
        return await run(sandbox, "cat manifest.csv papers/day1/log.txt")

    result = in_sandbox(tmp_path, read, files)

    assert result == CommandResult(0, "crate,weight\nC12,40\ncalm seas\n")


@pytest.mark.parametrize("path", ["../escape.txt", "papers/../../escape.txt", "{tmp}/escape.txt"])
def test_a_file_path_that_leaves_the_folder_is_refused_and_leaves_no_folder_behind(tmp_path: Path, path: str):
    parent = tmp_path / "sandboxes"
    parent.mkdir()
    files = {"ok.txt": b"fine", path.format(tmp=tmp_path): b"out"}

    with pytest.raises(ValueError, match="leaves the sandbox folder"):
        asyncio.run(LocalSandboxProvider(parent).create(files))

    assert list(parent.iterdir()) == []
    assert not (tmp_path / "escape.txt").exists()


def test_a_command_answers_with_its_output_and_exit_code(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> CommandResult:
        return await run(sandbox, "echo 'bay 3 is full'; exit 3")

    result = in_sandbox(tmp_path, act)

    assert result == CommandResult(3, "bay 3 is full\n")
    assert result.render(DEADLINE_S) == "bay 3 is full\n\n[exit code: 3]"


def test_a_command_runs_in_the_sandbox_folder(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, Path]:
        return await run(sandbox, "pwd"), sandbox.root

    result, root = in_sandbox(tmp_path, act)

    assert result.output == f"{root}\n"


def test_a_command_s_stderr_is_merged_into_its_output(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> CommandResult:
        return await run(sandbox, "echo out; echo err >&2; echo out again")

    result = in_sandbox(tmp_path, act)

    assert result.output == "out\nerr\nout again\n"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_command_past_its_deadline_is_killed_with_its_process_group_and_reported(
    tmp_path: Path, isolation: str
):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, bool]:
        result = await run(sandbox, "sleep 30.11 & sleep 30", timeout_s=0.5)
        return result, await eventually(lambda: running("30.11") == [])

    result, helper_gone = in_sandbox(tmp_path, act, isolation=isolation)

    assert result == CommandResult(exit_code=None, output="", timed_out=True)
    assert not result.ok
    assert result.render(0.5) == "[killed: the command ran past its 0.5 s deadline]"
    assert helper_gone


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_background_process_a_command_leaves_behind_is_killed_when_the_command_returns(
    tmp_path: Path, isolation: str
):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, bool]:
        result = await run(sandbox, "sleep 30.12 & echo started")
        return result, await eventually(lambda: running("30.12") == [])

    result, left_gone = in_sandbox(tmp_path, act, isolation=isolation)

    assert result == CommandResult(0, "started\n")
    assert left_gone


LEFT = "until [ -s left.txt ]; do sleep 0.01; done; echo started"
"""The command returns once the process that leaves its session has left it (it wrote left.txt)."""
LEFT_THEIR_SESSION = {
    "setsid": f"setsid bash -c 'echo > left.txt; exec sleep 300.31' & {LEFT}",
    "setsid, fds closed, double fork": (
        f"setsid bash -c 'sleep 300.31 & echo > left.txt' </dev/null >/dev/null 2>&1 & {LEFT}"
    ),
    "setsid, under a parent still running": (
        f"(setsid bash -c 'echo > left.txt; exec sleep 300.31' & exec sleep 30.31) & {LEFT}"
    ),
}


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("command", LEFT_THEIR_SESSION.values(), ids=LEFT_THEIR_SESSION.keys())
def test_a_process_that_left_its_session_is_killed_when_its_command_returns(
    tmp_path: Path, isolation: str, command: str
):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, bool, CommandResult]:
        result = await run(sandbox, command)
        gone = await eventually(lambda: running("300.31") == [] and running("30.31") == [])
        return result, gone, await run(sandbox, "echo next")

    try:
        result, gone, after = in_sandbox(tmp_path, act, isolation=isolation)
    finally:
        for pid in running("300.31") + running("30.31"):  # a failing run leaves nothing behind either
            os.kill(pid, signal.SIGKILL)

    assert result == CommandResult(0, "started\n")
    assert gone
    assert after == CommandResult(0, "next\n")


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_process_that_left_its_session_while_its_command_runs_is_killed_at_teardown(
    tmp_path: Path, isolation: str
):
    command = (
        "setsid bash -c 'sleep 300.32 & exit' </dev/null >/dev/null 2>&1; echo started >started.txt; sleep 9"
    )

    async def act(sandbox: LocalSandbox) -> tuple[bool, bool]:
        running_command = asyncio.create_task(run(sandbox, command, timeout_s=30))
        await written(sandbox.root / "started.txt")
        escaped = await eventually(lambda: running("300.32") != [])
        await sandbox.teardown()
        await asyncio.wait_for(running_command, DEADLINE_S)
        return escaped, await eventually(lambda: running("300.32") == [])

    try:
        escaped, gone = in_sandbox(tmp_path, act, isolation=isolation)
    finally:
        for pid in running("300.32"):
            os.kill(pid, signal.SIGKILL)

    assert escaped and gone


def test_output_over_the_cap_is_truncated_with_a_marker_of_the_bytes_dropped_and_the_command_finishes(
    tmp_path: Path,
):
    async def act(sandbox: LocalSandbox) -> CommandResult:
        return await run(sandbox, r"head -c 5000000 /dev/zero | tr '\0' x", cap=1000)

    result = in_sandbox(tmp_path, act)

    assert result.exit_code == 0
    assert result.truncated
    assert result.output == "x" * 1000 + "\n[output truncated: 4999000 more bytes]"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_teardown_removes_the_folder_and_kills_the_process_groups_still_running(
    tmp_path: Path, isolation: str
):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, bool, bool]:
        command = asyncio.create_task(run(sandbox, "sleep 30.13 & echo started > started.txt; wait"))
        await written(sandbox.root / "started.txt")
        assert await eventually(lambda: running("30.13") != [])
        await sandbox.teardown()
        result = await asyncio.wait_for(command, DEADLINE_S)
        return result, sandbox.root.exists(), await eventually(lambda: running("30.13") == [])

    result, folder_left, helper_gone = in_sandbox(tmp_path, act, isolation=isolation)

    assert not folder_left
    assert helper_gone
    assert not result.ok


def test_teardown_is_safe_to_call_twice_and_never_raises_even_when_the_folder_is_already_gone(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> None:
        shutil.rmtree(sandbox.root)
        await sandbox.teardown()
        await sandbox.teardown()

    in_sandbox(tmp_path, act)

    assert list(tmp_path.iterdir()) == []


def test_run_after_teardown_raises(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> CommandResult:
        await sandbox.teardown()
        return await run(sandbox, "echo too late")

    with pytest.raises(RuntimeError, match="torn down"):
        in_sandbox(tmp_path, act)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_file_past_work_mb_is_cut_there_with_the_writer_told_and_the_next_command_runs(
    tmp_path: Path, isolation: str
):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, CommandResult]:
        capped = await run(sandbox, "head -c 3000000 /dev/zero > big; echo status=$?; wc -c < big")
        return capped, await run(sandbox, "rm big; echo next")

    capped, after = in_sandbox(tmp_path, act, isolation=isolation, max_file_mb=1)

    assert "File size limit exceeded" in capped.output
    assert capped.output.endswith("status=153\n1048576\n")  # 128 + SIGXFSZ; the file stops at 1 MiB
    assert after == CommandResult(0, "next\n")


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_once_sealed_commands_run_in_a_new_shell_with_a_home_and_python_bytecode_of_the_verifiers_own(
    tmp_path: Path, isolation: str
):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, CommandResult, Path]:
        agents = await run(sandbox, 'echo "$HOME $$"')
        await sandbox.seal()
        await sandbox.seal()  # once is enough
        return (
            agents,
            await run(sandbox, 'echo "$HOME $$ $PYTHONNOUSERSITE $PYTHONPYCACHEPREFIX"'),
            sandbox.root,
        )

    agents, verifiers, root = in_sandbox(tmp_path, act, isolation=isolation)

    agent_home, agent_shell = agents.output.split()
    home, shell, no_user_site, bytecode = verifiers.output.split()
    assert agent_home == str(root)
    assert home != agent_home and not Path(home).is_relative_to(root)
    assert shell != agent_shell or isolation == "bubblewrap"  # confined, each shell is pid 1 of its own
    assert no_user_site == "1"
    assert Path(bytecode).parent == Path(home).parent


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_pth_file_the_agent_planted_in_its_homes_python_user_site_runs_no_code_in_a_verifiers_python(
    tmp_path: Path, isolation: str
):
    python = os.path.realpath(sys.executable)  # the interpreter itself, outside any virtualenv: user site on
    site = f".local/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    plant = f'mkdir -p "$HOME/{site}" && echo "import os; os._exit(0)" > "$HOME/{site}/forge.pth"'
    check = f"{python} -c 'import sys; sys.exit(3)'"

    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, CommandResult]:
        await run(sandbox, plant)
        forged = await run(sandbox, check, timeout_s=30)
        await sandbox.seal()
        return forged, await run(sandbox, check, timeout_s=30)

    forged, verified = in_sandbox(tmp_path, act, isolation=isolation)

    assert forged.exit_code == 0  # the agent's own python runs the planted code
    assert verified.exit_code == 3


def test_a_path_entry_the_agent_could_write_to_is_left_out_of_the_verifiers_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PATH", f".{os.pathsep}{os.environ['PATH']}")
    shim = "printf '#!/bin/sh\\necho 287\\n' > tr && chmod +x tr"

    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, CommandResult]:
        await run(sandbox, shim)
        forged = await run(sandbox, "tr -d x < /dev/null")
        await sandbox.seal()
        return forged, await run(sandbox, "tr -d x < /dev/null")

    forged, verified = in_sandbox(tmp_path, act)

    assert forged.output == "287\n"
    assert verified == CommandResult(0, "")
