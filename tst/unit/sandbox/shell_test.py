"""The shell that lives in a local sandbox for its episode: one per sandbox, each command framed and
its own, a command past its deadline stopped by the shell, a new shell after one that had to be killed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from agent_env import CommandResult
from agent_env.sandbox import LocalSandbox
from agent_env.sandbox._shell import DRIVER, SHELL_NAME, Shell
from tst.support.waiting import eventually, running
from tst.unit.sandbox._local import ISOLATIONS, in_sandbox, run


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_commands_run_in_one_shell_started_once_yet_share_only_the_folder(tmp_path: Path, isolation: str):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, CommandResult, Path]:
        first = await run(sandbox, "echo $PPID; export CARGO=lead; cd /tmp; echo $CARGO")
        return first, await run(sandbox, 'echo $PPID; echo "[$CARGO]"; pwd'), sandbox.root

    first, second, root = in_sandbox(tmp_path, act, isolation=isolation)

    shell, cargo = first.output.split()
    assert cargo == "lead"
    assert second.output.split() == [shell, "[]", str(root)]


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_command_past_its_deadline_is_killed_with_what_it_started_and_its_shell_runs_on(
    tmp_path: Path, isolation: str
):
    async def act(sandbox: LocalSandbox) -> tuple[str, CommandResult, str]:
        before = (await run(sandbox, "echo $PPID")).output
        killed = await run(sandbox, "sleep 30.21 & echo begun; sleep 30.21", timeout_s=0.3)
        return before, killed, (await run(sandbox, "echo $PPID")).output

    before, killed, after = in_sandbox(tmp_path, act, isolation=isolation)

    assert killed == CommandResult(None, "begun\n", timed_out=True)
    assert after == before
    assert running("30.21") == []


def test_a_shell_that_does_not_stop_its_command_when_told_is_killed_with_it_and_replaced(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> tuple[str, CommandResult, str]:
        before = (await run(sandbox, "echo $PPID")).output
        killed = await run(sandbox, "kill -STOP $PPID; echo begun; sleep 30.25", timeout_s=0.3)
        return before, killed, (await run(sandbox, "echo $PPID")).output

    before, killed, after = in_sandbox(tmp_path, act, isolation="none")

    assert killed == CommandResult(None, "begun\n", timed_out=True)
    assert after.strip().isdigit() and after != before
    assert running("30.25") == []


def test_a_command_that_kills_its_shell_is_told_so_and_the_next_command_runs(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, CommandResult]:
        return await run(sandbox, "echo going; kill -9 $PPID; sleep 30.22"), await run(sandbox, "echo next")

    killer, after = in_sandbox(tmp_path, act, isolation="none")

    assert killer.exit_code is None and not killer.timed_out and killer.output.startswith("going")
    assert killer.render(2.0).endswith("[killed: the shell that ran the command ended under it]")
    assert after == CommandResult(0, "next\n")
    assert running("30.22") == []


@pytest.mark.needs("bubblewrap")
def test_confined_a_command_that_kills_every_process_it_can_leaves_the_shell_running(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> list[CommandResult]:
        return [
            await run(sandbox, "echo $PPID"),
            await run(sandbox, "kill -9 -1 2>/dev/null; echo still here"),
            await run(sandbox, "echo $PPID"),
        ]

    before, killer, after = in_sandbox(tmp_path, act, isolation="bubblewrap")

    assert before.output == "1\n" == after.output
    assert killer == CommandResult(0, "still here\n")


def test_output_an_escaped_leftover_writes_between_commands_is_not_the_next_command_s(tmp_path: Path):
    """Through the bare driver, which kills a command's group alone (a sandbox's shell has a launcher
    or a namespace kill the rest), so that a setsid process escapes and writes between commands."""

    async def act() -> tuple[bool, CommandResult]:
        driver = await asyncio.create_subprocess_exec(
            *["bash", "-c", DRIVER, SHELL_NAME, "group", ""],
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert driver.stdin is not None and driver.stdout is not None
        stdin, stdout = driver.stdin, driver.stdout

        async def write(data: bytes) -> None:
            stdin.write(data)
            await stdin.drain()

        async def interrupt() -> None:
            driver.send_signal(signal.SIGUSR1)

        shell = Shell(write, lambda: stdout.read(65536), interrupt)
        try:
            await shell.run(  # it returns once the leftover is in a session of its own
                "setsid bash -c ': > left; sleep 0.2; echo late; exec sleep 30.23' & "
                "until [ -e left ]; do sleep 0.01; done",
                timeout_s=10,
                max_output_bytes=100,
            )
            wrote = await eventually(lambda: running("30.23") != [])
            return wrote, await shell.run("echo next", timeout_s=10, max_output_bytes=100)
        finally:
            for pid in running("30.23"):  # it holds the driver's output open
                os.kill(pid, 9)
            driver.kill()
            await driver.wait()

    wrote, result = asyncio.run(act())

    assert wrote
    assert result == CommandResult(0, "next\n")


def test_a_command_that_prints_a_marker_with_a_nonce_it_guessed_runs_on_to_its_end(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> CommandResult:
        return await run(sandbox, r"printf '\001%032d 1\n\000%032d 0\n' 0 0; echo after; exit 4")

    result = in_sandbox(tmp_path, act)

    assert result.exit_code == 4
    assert result.output.endswith("after\n")


def test_a_command_reads_an_empty_stdin_and_a_nul_in_a_command_is_refused(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, CommandResult]:
        return await run(sandbox, "cat; echo read-nothing"), await run(sandbox, "echo a\0b")

    read, nul = in_sandbox(tmp_path, act)

    assert read == CommandResult(0, "read-nothing\n")
    assert nul == CommandResult(2, "bash: a command cannot contain a NUL character")


def test_the_framing_holds_when_the_shell_s_output_arrives_one_byte_at_a_time(tmp_path: Path):
    """The markers split over reads at every byte, the output over its cap, and a leftover killed
    before it could write into the next command's output: all through the real driver."""
    process = subprocess.Popen(
        ["bash", "-c", DRIVER, SHELL_NAME, "group", ""],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    async def write(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    def pump(loop: asyncio.AbstractEventLoop, into: asyncio.Queue[bytes]) -> None:
        """One byte at a time into `into`, whose `get` (unlike a thread's read) loses nothing if cancelled."""
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody reads any more
            while byte := stdout.read(1):
                loop.call_soon_threadsafe(into.put_nowait, byte)

    async def interrupt() -> None:
        os.kill(process.pid, signal.SIGUSR1)

    async def act() -> list[CommandResult]:
        output: asyncio.Queue[bytes] = asyncio.Queue()
        pumps.append(threading.Thread(target=pump, args=(asyncio.get_running_loop(), output)))
        pumps[0].start()
        shell = Shell(write, output.get, interrupt)
        return [
            await shell.run("printf 'x%.0s' $(seq 300); echo; exit 5", timeout_s=10, max_output_bytes=100),
            await shell.run("(sleep 0.2; echo stray) & echo mine", timeout_s=10, max_output_bytes=100),
            await shell.run("echo early; sleep 30.24", timeout_s=0.5, max_output_bytes=100),
            await shell.run("sleep 0.5; echo last", timeout_s=10, max_output_bytes=100),
        ]

    pumps: list[threading.Thread] = []
    try:
        capped, mine, late, last = asyncio.run(act())
    finally:
        process.kill()
        process.wait(10)
        for thread in pumps:
            thread.join(10)
        stdin.close()
        stdout.close()

    assert capped == CommandResult(5, "x" * 100 + "\n[output truncated: 201 more bytes]", truncated=True)
    assert mine == CommandResult(0, "mine\n")
    assert late == CommandResult(None, "early\n", timed_out=True)
    assert last == CommandResult(0, "last\n")
    assert running("30.24") == []


def test_a_command_keeps_the_sandbox_s_locale_and_its_output_comes_whole_however_quick(tmp_path: Path):
    async def act(sandbox: LocalSandbox) -> list[CommandResult]:
        return [await run(sandbox, 'echo "$LANG:${LC_ALL-unset}"; printf "é" | wc -m')] + [
            await run(sandbox, f"echo {index}") for index in range(200)
        ]

    locale, *quick = in_sandbox(tmp_path, act)

    assert locale == CommandResult(0, "C.UTF-8:unset\n1\n")
    assert quick == [CommandResult(0, f"{index}\n") for index in range(200)]
