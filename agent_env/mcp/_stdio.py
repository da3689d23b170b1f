"""A stdio MCP server's process: started in a session of its own, talked to over its stdin and stdout,
and stopped with every process it started.

The process is a plain `subprocess.Popen` (`agent_env._processes`), not the SDK's `stdio_client`, so
that the episode holds its pid: a crash is told with its exit code and the last lines it wrote to
stderr. It runs under `agent_env._subreaper`, a launcher that every process the server starts stays
below, whatever session it makes: the launcher kills them all when the server ends, and at the stop
they are killed from here while it still runs; then its process group and session are (before it is
reaped), so nothing it started outlives the episode. bubblewrap is not used: it would take the
server's network and its writes to the machine, and a process namespace alone adds nothing to this.

Each message the server writes is read up to `max_message_bytes`: one over it is dropped as it arrives
(never held), and the call it answers gets `limits.too_large` instead, so the session goes on. A
large message is parsed on a worker thread, off the event loop. A line that does not parse is made
valid Unicode (`_unicode.valid_json`) and parsed again; one that still does not is the error
`limits.UNREADABLE` for the call it names, at once, or else skipped (said once in the log: servers
print banners), never handed to the SDK's session, which would drop it and leave its call waiting.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pydantic
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage

from agent_env import _subreaper
from agent_env._errors import AgentEnvError
from agent_env._processes import exit_watch, kill_group, kill_session, ready, reap
from agent_env._threads import run_sync
from agent_env._unicode import valid_json
from agent_env.mcp._limits import UNREADABLE, RequestId, local_error, too_large
from agent_env.mcp._log import ServerLog

INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR")
"""The variables a server gets from the process that starts it (its `env` adds to them): enough to
run, none of the trainer's secrets."""
STOP_GRACE_S = 2.0
"""How long a server has to exit once its stdin closes (as MCP asks), and again after SIGTERM."""
STDERR_TAIL_BYTES = 2048
_READ_CHUNK = 64 * 1024
_PARSE_ON_LOOP_BYTES = 64 * 1024
_ID_SCAN_BYTES = 256

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]


class ServerExitedError(AgentEnvError):
    """The server closed its output: it exited, or is about to."""


class StdioServer:
    """One server process; `streams()` is its transport for the SDK's `ClientSession`."""

    def __init__(self, process: subprocess.Popen[bytes], *, max_message_bytes: int, log: ServerLog) -> None:
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
        self.max_message_bytes = max_message_bytes
        self.log = log
        self._awaited: dict[RequestId, None] = {}
        """The ids of the requests sent and not yet answered, oldest first."""

    @classmethod
    async def start(
        cls,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        *,
        max_message_bytes: int,
        log: ServerLog,
    ) -> StdioServer:
        """Start the server under the launcher (fork and exec off the event loop); OSError when it
        cannot be."""
        environment = {name: os.environ[name] for name in INHERITED if name in os.environ}
        environment.update(env)
        program = _program(command, environment.get("PATH", os.defpath), cwd)
        process = await run_sync(
            subprocess.Popen,
            [sys.executable, "-I", "-S", _subreaper.__file__, program, *args],
            cwd=cwd,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        return cls(process, max_message_bytes=max_message_bytes, log=log)

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
        every process below the launcher, and whatever of its group and session is left, reap it and
        close its pipes. Never raises."""
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
        if self.process.poll() is None:
            with contextlib.suppress(Exception):
                await run_sync(_subreaper.kill_descendants, self.process.pid)
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
        """Each line the server writes, as a message; one over `max_message_bytes` is dropped as it
        arrives, and the call it answers told so."""
        pieces: list[bytes] = []
        size = 0
        head: bytes | None = None  # of a message being dropped
        told = False  # whether the call it answers was told
        async with messages:
            while chunk := await self._read(self._stdout):
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    piece, start = chunk[start:end], end + 1
                    if head is not None:
                        if not told:
                            await self._dropped(messages, (b"".join(pieces) + piece)[-_ID_SCAN_BYTES:])
                        head = None
                    else:
                        await self._deliver(messages, b"".join([*pieces, piece]))
                    pieces, size = [], 0
                rest = chunk[start:]
                pieces.append(rest)
                size += len(rest)
                if head is None and size > self.max_message_bytes:
                    head = b"".join(pieces)[:_ID_SCAN_BYTES]
                    told = await self._dropped_early(messages, head)
                if head is not None:  # only the tail is kept: the answering id may be there
                    pieces, size = [b"".join(pieces)[-_ID_SCAN_BYTES:]], 0
        raise ServerExitedError("the server closed its output")

    async def _deliver(
        self, messages: MemoryObjectSendStream[SessionMessage | Exception], line: bytes
    ) -> None:
        if not line.strip():
            return
        try:
            message = await self._parsed(line)
        except pydantic.ValidationError as exc:
            if (repaired := await self._repaired(line)) is None:
                await self._unreadable(messages, line, exc)
                return
            message = repaired
        if isinstance(message.root, types.JSONRPCResponse | types.JSONRPCError):
            if message.root.id not in self._awaited:
                return  # the answer to a call already told its answer was dropped
            del self._awaited[message.root.id]
        await messages.send(SessionMessage(message))

    async def _parsed(self, line: bytes) -> types.JSONRPCMessage:
        if len(line) > _PARSE_ON_LOOP_BYTES:
            return await run_sync(types.JSONRPCMessage.model_validate_json, line)
        return types.JSONRPCMessage.model_validate_json(line)

    async def _repaired(self, line: bytes) -> types.JSONRPCMessage | None:
        """A line that did not parse, parsed once made valid Unicode (said once in the log); None when
        it was valid, or still does not parse."""
        valid = valid_json(line)
        if valid is line:
            return None
        try:
            message = await self._parsed(valid)
        except pydantic.ValidationError:
            return None
        self.log.not_unicode()
        return message

    async def _unreadable(
        self,
        messages: MemoryObjectSendStream[SessionMessage | Exception],
        line: bytes,
        error: pydantic.ValidationError,
    ) -> None:
        """A line that is not a JSON-RPC message: the call it names (at its start or its end) gets
        `UNREADABLE` at once; a line that names none is skipped, said once in the log."""
        why = error.errors()[0]["msg"] if error.errors() else str(error)
        awaited = list(self._awaited)
        named = _named(awaited, line[:_ID_SCAN_BYTES]) or _named(awaited, line[-_ID_SCAN_BYTES:])
        if not named:
            self.log.say_once(
                "not JSON-RPC",
                f"wrote a line to stdout that is not a JSON-RPC message, skipped ({why}): "
                f"{line[:200].decode(errors='replace')!r}",
            )
            return
        for request in named:
            self._awaited.pop(request, None)
            answer = local_error(request, UNREADABLE, f"answered with what is not a JSON-RPC message ({why})")
            await messages.send(SessionMessage(types.JSONRPCMessage(answer)))

    async def _dropped_early(
        self, messages: MemoryObjectSendStream[SessionMessage | Exception], head: bytes
    ) -> bool:
        """A message just went over the cap: the call it answers is told at once when it is plain which
        (the only one awaited, or the one its start names); whether it was."""
        awaited = list(self._awaited)
        named = awaited if len(awaited) == 1 else _named(awaited, head)
        if len(named) == 1:
            await self._fail(messages, named)
        return len(named) == 1

    async def _dropped(
        self, messages: MemoryObjectSendStream[SessionMessage | Exception], tail: bytes
    ) -> None:
        """A message over the cap ended, its call not told yet: the call its end names is, else every
        call awaited (none can be matched to the answer)."""
        awaited = list(self._awaited)
        named = _named(awaited, tail)
        await self._fail(messages, named if len(named) == 1 else awaited)

    async def _fail(
        self, messages: MemoryObjectSendStream[SessionMessage | Exception], ids: list[RequestId]
    ) -> None:
        for request in ids:
            self._awaited.pop(request, None)
            answer = too_large(request, self.max_message_bytes)
            await messages.send(SessionMessage(types.JSONRPCMessage(answer)))

    async def _write_messages(self, messages: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with messages:
            async for message in messages:
                if isinstance(message.message.root, types.JSONRPCRequest):
                    self._awaited[message.message.root.id] = None
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


def _named(ids: list[RequestId], text: bytes) -> list[RequestId]:
    """Those of `ids` that `text` (a JSON-RPC message's start or end) gives as its `"id"`."""
    return [
        request
        for request in ids
        if re.search(rb'"id"\s*:\s*' + re.escape(_json_of(request)) + rb"\s*[,}]", text) is not None
    ]


def _json_of(request: RequestId) -> bytes:
    return (f'"{request}"' if isinstance(request, str) else str(request)).encode()


def _program(command: str, path: str, cwd: Path) -> str:
    """The file `command` names, found as exec would (in `cwd` when it has a slash, else on `path`), so
    that a missing one fails the start here, saying so; FileNotFoundError if there is none."""
    found = str(cwd / command) if "/" in command else shutil.which(command, path=path)
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return found
