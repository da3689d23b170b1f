"""A stdio MCP server's process: started in a session of its own, talked to over its stdin and stdout,
and stopped with every process it started.

The process is a plain `subprocess.Popen` (`agent_env._processes`), not the SDK's `stdio_client`, so
that the episode holds its pid: a crash is told with its exit code and the last lines it wrote to
stderr, and at the stop its process group and session are killed before it is reaped (while the
exited leader still holds the group's id), so nothing it started outlives the episode.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage

from agent_env._processes import exit_watch, kill_group, kill_session, ready, reap
from agent_env._threads import run_sync

INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR")
"""The variables a server gets from the process that starts it (its `env` adds to them): enough to
run, none of the trainer's secrets."""
STOP_GRACE_S = 2.0
"""How long a server has to exit once its stdin closes (as MCP asks), and again after SIGTERM."""
STDERR_TAIL_BYTES = 2048
_READ_CHUNK = 64 * 1024

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]


class ServerExitedError(Exception):
    """The server closed its output: it exited, or is about to."""


class StdioServer:
    """One server process; `streams()` is its transport for the SDK's `ClientSession`."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        self._stdin, self._stdout, self._stderr = (
            process.stdin.fileno(),
            process.stdout.fileno(),
            process.stderr.fileno(),
        )
        for fd in (self._stdin, self._stdout, self._stderr):
            os.set_blocking(fd, False)
        self._exit = exit_watch(process.pid)
        self._stderr_tail: collections.deque[bytes] = collections.deque()
        self._stderr_bytes = 0
        self._stopped = False

    @classmethod
    async def start(cls, command: str, args: Sequence[str], env: Mapping[str, str], cwd: Path) -> StdioServer:
        """Start the server (fork and exec off the event loop); OSError when it cannot be."""
        environment = {name: os.environ[name] for name in INHERITED if name in os.environ}
        environment.update(env)
        process = await run_sync(
            subprocess.Popen,
            [command, *args],
            cwd=cwd,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        return cls(process)

    @property
    def exit_code(self) -> int | None:
        return self.process.poll() if not self._stopped else self.process.returncode

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (about `STDERR_TAIL_BYTES`), as one line."""
        text = b"".join(self._stderr_tail).decode("utf-8", errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-5:])

    async def exited(self, timeout_s: float) -> int | None:
        """The exit code, once the server exits within `timeout_s`; None if it runs on."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while (code := self.process.poll()) is None and (left := deadline - loop.time()) > 0:
            if self._exit is None:
                await asyncio.sleep(min(0.05, left))
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await ready(self._exit, writing=False)
        return code

    @asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[ReadStream, WriteStream]]:
        """The server's messages and a stream to send it messages, while it runs; its stderr is read
        meanwhile. Raises ServerExitedError (in a group) once the server closes its output."""
        read_writer, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as group:
            group.start_soon(self._read_messages, read_writer)
            group.start_soon(self._write_messages, write_reader)
            group.start_soon(self._read_stderr)
            try:
                yield read, write
            finally:
                group.cancel_scope.cancel()
                for stream in (read, write, read_writer, write_reader):
                    await stream.aclose()

    async def stop(self) -> None:
        """Close its stdin, give it `STOP_GRACE_S` to exit, then SIGTERM and as long again; then kill
        whatever of its group and session is left, reap it and close its pipes. Never raises."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        if await self.exited(STOP_GRACE_S) is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGTERM)
            await self.exited(STOP_GRACE_S)
        kill_group(self.process.pid)
        kill_session(self.process.pid)
        exit_fd, self._exit = self._exit, None
        await reap(self.process, exit_fd, within_s=STOP_GRACE_S)

    async def _read(self, fd: int) -> bytes:
        """The next output on `fd`; b"" once it ended, or once the server itself exited (a process it
        started may hold the pipe open)."""
        while True:
            try:
                return os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                if self.process.poll() is not None:
                    return b""
                await ready(fd, writing=False, or_exit=self._exit)

    async def _read_messages(self, messages: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        buffer = b""
        async with messages:
            while chunk := await self._read(self._stdout):
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    try:
                        message = types.JSONRPCMessage.model_validate_json(line)
                    except Exception as exc:  # not JSON-RPC: the session is told, as the SDK's transport does
                        await messages.send(exc)
                        continue
                    await messages.send(SessionMessage(message))
        raise ServerExitedError("the server closed its output")

    async def _write_messages(self, messages: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with messages:
            async for message in messages:
                data = memoryview(
                    (message.message.model_dump_json(by_alias=True, exclude_none=True) + "\n").encode()
                )
                while data:
                    try:
                        data = data[os.write(self._stdin, data) :]
                    except BlockingIOError:
                        await ready(self._stdin, writing=True)
                    except (BrokenPipeError, OSError) as exc:
                        raise ServerExitedError(f"the server closed its input ({exc})") from None

    async def _read_stderr(self) -> None:
        while chunk := await self._read(self._stderr):
            self._stderr_tail.append(chunk)
            self._stderr_bytes += len(chunk)
            while self._stderr_bytes - len(self._stderr_tail[0]) >= STDERR_TAIL_BYTES:
                self._stderr_bytes -= len(self._stderr_tail.popleft())
