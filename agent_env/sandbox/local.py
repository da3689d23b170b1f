"""The `local` sandbox: a temporary folder per episode and bash commands as subprocesses in it.

It is the embedded default, made for trusted bundles and tests: it is not an isolation boundary.
Each command runs in a process group of its own; when the command returns, or runs past its
deadline, the whole group is killed, so nothing a command started keeps running between commands.
Where bubblewrap runs (`bubblewrap.py`), each command is also confined: no network, only its
episode's folder writable, and a process namespace that ends with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Mapping
from pathlib import Path

from agent_env._private.asyncio_process import let_go_of_pipes
from agent_env._threads import run_sync
from agent_env.sandbox.base import CappedOutput, CommandResult
from agent_env.sandbox.bubblewrap import bubblewrap_for, confined

_READ_CHUNK = 64 * 1024
_OUTPUT_GRACE_S = 1.0
_EXIT_POLL_S = 0.01
FOLDER_PREFIX = "agent-env-sandbox-"


class LocalSandbox:
    """A folder and the process groups of the commands running in it."""

    def __init__(self, root: Path, *, bwrap: str | None = None, max_file_mb: int | None = None) -> None:
        self.root = root
        self.bwrap = bwrap
        self.max_file_mb = max_file_mb
        self._groups: set[int] = set()
        self._closed = False

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        if self._closed:
            raise RuntimeError("the sandbox has been torn down")
        argv = ["bash", "-c", command]
        if self.max_file_mb is not None:  # bash's ulimit -f counts KiB
            argv = [
                "bash",
                "-c",
                'ulimit -f "$1" && exec bash -c "$2"',
                "agent-env",
                str(self.max_file_mb * 1024),
                command,
            ]
        process = await asyncio.create_subprocess_exec(
            *(confined(self.bwrap, self.root, argv) if self.bwrap else argv),
            cwd=self.root,
            env=_environment(self.root),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        self._groups.add(process.pid)
        assert process.stdout is not None
        output = CappedOutput(max_output_bytes)
        reader = asyncio.create_task(_drain(process.stdout, output))
        timed_out = False
        try:
            await asyncio.wait_for(_exited(process), timeout_s)
        except TimeoutError:
            timed_out = True
        except BaseException:
            reader.cancel()
            raise
        finally:
            _kill_group(process.pid)
            self._groups.discard(process.pid)
        await _exited(process)
        try:
            await asyncio.wait_for(asyncio.shield(reader), _OUTPUT_GRACE_S)
        except TimeoutError:
            # Something that left the group (setsid) holds the pipe: keep what was read, let go of it.
            reader.cancel()
            let_go_of_pipes(process)
        return CommandResult(
            None if timed_out else process.returncode, output.text(), timed_out, output.dropped > 0
        )

    async def teardown(self) -> None:
        self._closed = True
        for group in list(self._groups):
            _kill_group(group)
        self._groups.clear()
        with contextlib.suppress(Exception):
            await run_sync(shutil.rmtree, self.root, ignore_errors=True)


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
                    raise ValueError(f"sandbox file '{relative}' leaves the sandbox folder")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return LocalSandbox(root, bwrap=self.bwrap, max_file_mb=self.max_file_mb)


async def _exited(process: asyncio.subprocess.Process) -> None:
    """Return once the command's own process has exited.

    `Process.wait()` alone also waits for the output pipe to close, which a background process the
    command started holds open until its group is killed: the command would run to its deadline.
    """
    waiting = asyncio.ensure_future(process.wait())
    try:
        while process.returncode is None and not waiting.done():
            await asyncio.wait({waiting}, timeout=_EXIT_POLL_S)
    finally:
        waiting.cancel()


async def _drain(stream: asyncio.StreamReader, output: CappedOutput) -> None:
    while chunk := await stream.read(_READ_CHUNK):
        output.add(chunk)


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _environment(root: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(root),
        "TMPDIR": str(root),
        "LANG": "C.UTF-8",
    }
