"""The `local` sandbox: a temporary folder per episode and bash commands run in it by a shell that
lives for the episode (`agent_env.sandbox._shell`).

It is the embedded default, made for trusted bundles and tests: it is not an isolation boundary.
Each command runs in a process group of its own; when the command returns the whole group is
killed, so nothing a command started keeps running between commands. Past its deadline, the shell is
told to kill the command (and does so as after its end); a shell that does not is killed with all it
runs, and the next command starts a new shell.
Unconfined, the shell runs under `agent_env._subreaper`, the launcher stdio MCP servers run under: a
process that left the command's group and session (`setsid`, a double fork) stays below it, and is
killed when its command returns (`kill_leftovers`), and with everything else when the shell ends.
Where bubblewrap runs (`_bubblewrap.py`), the shell is confined: no network, only its episode's
folder writable, and a process namespace of which it is pid 1, so that what a command leaves behind
is killed after it (setsid or not), and everything is when the shell is.
Sealed for its verifiers (`seal`, `agent_env.sandbox._sealing`), the agent's shell is killed with all
it runs, and the verifiers' commands run in a new shell with a home and a Python bytecode folder of
their own, and no `PATH` entry in the episode's folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from agent_env import _subreaper
from agent_env._contracts.sandbox import CommandResult
from agent_env._errors import ArgumentError, StateError
from agent_env._processes import exit_watch, exited, kill_group, kill_session, ready, reap
from agent_env._threads import run_sync
from agent_env.sandbox._bubblewrap import bubblewrap_for, confined
from agent_env.sandbox._sealing import verifier_environment
from agent_env.sandbox._shell import DRIVER, SHELL_NAME, Shell, ShellSlot

_READ_CHUNK = 64 * 1024
_OUTPUT_GRACE_S = 1.0
_LAUNCHER_EXIT_S = _subreaper.KILL_WITHIN_S + 1.0
"""How long the launcher has to kill all below it and exit, once its shell was killed."""
FOLDER_PREFIX = "agent-env-sandbox-"


class LocalSandbox:
    """A folder, and the shell that runs its commands (`agent_env.sandbox._shell`), started at the
    first command and again after one that had to be killed."""

    def __init__(self, root: Path, *, bwrap: str | None = None, max_file_mb: int | None = None) -> None:
        self.root = root
        self.bwrap = bwrap
        self.max_file_mb = max_file_mb
        self._environment = _environment(root)
        self._shells: ShellSlot[_LocalShell] = ShellSlot(self._start, _LocalShell.end)
        self._scratch: Path | None = None
        """The verifiers' own folder (their home, their Python bytecode), made at the seal."""
        self._torn_down = False

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        return await self._shells.run(command, timeout_s=timeout_s, max_output_bytes=max_output_bytes)

    async def seal(self) -> None:
        """Kill the agent's shell with all it runs; from now on, run commands in a shell of the
        verifiers' own (`agent_env.sandbox._sealing`). Once; later calls do nothing."""
        if self._scratch is not None:
            return
        self._scratch = Path(await run_sync(tempfile.mkdtemp, "", "agent-env-verifier-"))
        await self._shells.close()
        if self._torn_down:
            raise StateError("the sandbox has been torn down")
        self._environment = {
            **self._environment,
            "PATH": _outside(self._environment["PATH"], self.root),
            **verifier_environment(str(self._scratch), own_home=True),
        }
        self._shells = ShellSlot(self._start, _LocalShell.end)

    async def teardown(self) -> None:
        self._torn_down = True
        if self._shells.running is not None:
            self._shells.running.kill_now()  # a command running now then answers at once
        await self._shells.close()
        for folder in (self.root, self._scratch):
            if folder is not None:
                with contextlib.suppress(Exception):
                    await run_sync(shutil.rmtree, folder, ignore_errors=True)

    async def _start(self) -> _LocalShell:
        return _LocalShell.start(self.root, self.bwrap, self.max_file_mb, self._environment)


class _LocalShell:
    """One `DRIVER` process in a session of its own, confined by bubblewrap (`bwrap`) if given, else
    under the launcher (`agent_env._subreaper`): `process` is bubblewrap's, or the launcher's.

    It is a plain `subprocess.Popen` whose pipes are read and written without blocking, whichever
    event loop runs the sandbox's calls: an asyncio subprocess belongs to the loop that started it.
    """

    def __init__(self, process: subprocess.Popen[bytes], *, confined: bool) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.confined = confined
        self._stdin, self._stdout = process.stdin.fileno(), process.stdout.fileno()
        os.set_blocking(self._stdin, False)
        os.set_blocking(self._stdout, False)
        self._exit = exit_watch(process.pid)
        self.shell = (
            Shell(self._write, self._read, self._interrupt)
            if confined
            else _LeftoversKilled(self._write, self._read, self._interrupt, launcher=process.pid)
        )

    @classmethod
    def start(
        cls, root: Path, bwrap: str | None, max_file_mb: int | None, environment: Mapping[str, str]
    ) -> _LocalShell:
        file_kib = "" if max_file_mb is None else str(max_file_mb * 1024)  # ulimit -f counts KiB
        if bwrap:
            argv = confined(bwrap, root, ["bash", "-c", DRIVER, SHELL_NAME, "all", file_kib], as_pid_1=True)
        else:
            launcher = [sys.executable, "-I", "-S", _subreaper.__file__]
            argv = [*launcher, "bash", "-c", DRIVER, SHELL_NAME, "group", file_kib]
        process = subprocess.Popen(
            argv,
            cwd=root,
            env=dict(environment),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return cls(process, confined=bwrap is not None)

    async def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._stdin, view) :]
            except BlockingIOError:
                await ready(self._stdin, writing=True)

    async def _read(self) -> bytes:
        """The shell's next output; b"" once it ended, or once the shell itself exited (a command that
        killed it may hold its output open)."""
        while True:
            try:
                return os.read(self._stdout, _READ_CHUNK)
            except BlockingIOError:
                if self.process.poll() is not None:
                    return b""
                await ready(self._stdout, writing=False, or_exit=self._exit)

    async def _interrupt(self) -> None:
        """Tell the shell to stop the command it runs: SIGUSR1 to the shell, through the launcher
        (which forwards it) unconfined, or to bubblewrap's child when confined (pid 1 of the namespace
        bubblewrap made)."""
        shell = _only_child(self.process.pid) if self.confined else self.process.pid
        os.kill(shell, signal.SIGUSR1)

    def kill_now(self) -> None:
        """Kill the shell and all it runs; a read waiting on its output then ends.

        Unconfined, the command runs as a process group of its own in the shell's session: that group
        is killed, and the launcher's children (the shell, and what commands left behind; where Linux
        does not list them, the shell by a SIGTERM the launcher forwards), so that the launcher kills
        every process left below it and exits. Confined, the shell is pid 1 of a process namespace
        that ends with it (the pid it gave is that namespace's, never a host's).
        """
        if self.confined:
            kill_group(self.process.pid)
            return
        started = self.shell.started
        if started is not None:
            kill_group(started.pid)
        for child in _subreaper.children(self.process.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.process.pid, signal.SIGTERM)

    async def end(self) -> None:
        """`kill_now`, reap the shell (killed, it exits at once; unconfined, the launcher once it killed
        all below it) and close the host's ends of its pipes, only once no read or write waits on
        them. A launcher that does not exit in time (stopped) has all below it killed from here first,
        then its group and session."""
        self.kill_now()
        exit_fd, self._exit = self._exit, None
        if not self.confined and not await exited(self.process, exit_fd, within_s=_LAUNCHER_EXIT_S):
            with contextlib.suppress(Exception):
                await run_sync(_subreaper.kill_descendants, self.process.pid)
            kill_group(self.process.pid)
            kill_session(self.process.pid)
        await reap(self.process, exit_fd, within_s=_OUTPUT_GRACE_S)


class _LeftoversKilled(Shell):
    """An unconfined shell's: once a command returned, what it left below the launcher is killed, in
    its session or out of it (`setsid`), as bubblewrap's namespace has it; the shell's own kill of
    the command's group is the rest. Reading two small files when nothing was left."""

    def __init__(
        self,
        write: Callable[[bytes], Awaitable[None]],
        read: Callable[[], Awaitable[bytes]],
        interrupt: Callable[[], Awaitable[None]],
        *,
        launcher: int,
    ) -> None:
        super().__init__(write, read, interrupt)
        self._launcher = launcher

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        result = await super().run(command, timeout_s=timeout_s, max_output_bytes=max_output_bytes)
        if self.alive and _subreaper.leftovers(self._launcher):
            await run_sync(_subreaper.kill_leftovers, self._launcher)
        return result


class LocalSandboxProvider:
    """Makes local sandboxes under the system's temporary folder (or `parent`)."""

    name = "local"

    def __init__(
        self, parent: str | Path | None = None, *, isolation: str = "auto", max_file_mb: int | None = None
    ) -> None:
        self.parent = Path(parent) if parent is not None else None
        self.bwrap = bubblewrap_for(isolation)
        self.max_file_mb = max_file_mb

    async def create(self, files: Mapping[str, bytes]) -> LocalSandbox:
        return await run_sync(self._create, dict(files))

    def _create(self, files: dict[str, bytes]) -> LocalSandbox:
        root = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=self.parent)).resolve()
        try:
            for relative, content in files.items():
                target = (root / relative).resolve()
                if not target.is_relative_to(root) or target == root:
                    raise ArgumentError(f"sandbox file '{relative}' leaves the sandbox folder")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return LocalSandbox(root, bwrap=self.bwrap, max_file_mb=self.max_file_mb)


def _only_child(pid: int) -> int:
    """The one child of `pid` (Linux's /proc lists them); an error if it has none or several."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    if len(children) != 1:
        raise ProcessLookupError(f"process {pid} has {len(children)} children, not one")
    return int(children[0])


def _environment(root: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(root),
        "TMPDIR": str(root),
        "LANG": "C.UTF-8",
    }


def _outside(search_path: str, root: Path) -> str:
    """`search_path` without the entries a command could have written to: relative ones (the current
    folder, the episode's) and those inside the episode's folder."""
    kept = [
        entry
        for entry in search_path.split(os.pathsep)
        if os.path.isabs(entry) and not Path(entry).resolve().is_relative_to(root)
    ]
    return os.pathsep.join(kept)
