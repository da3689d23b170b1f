"""One episode's MCP env: a session with its server, from the deploy to the teardown.

A stdio server is started per episode, in the episode's sandbox folder when it has one on this host
(else in a temporary folder of its own, or in `cwd`), and stopped with all it started at teardown. A
URL server is shared: each episode opens its own MCP session on it, and closes it at teardown.

The SDK's transports and `ClientSession` live in task groups that must end in the task that began
them, while an episode deploys in one task and tears down in another: so each session runs in a task
of its own (the runner), which starts it, lists the tools, and holds it open until `close()`. Calls
race the runner: a server that dies mid-call ends the call at once (`ENV_FAILED`, naming the server
and why), and every call has `call_timeout_s`, past which the episode ends (`DEADLINE_EXCEEDED`).
Calls race what the session cannot read too: a message the transport hands it as an error (one that
does not parse) fails the calls waiting at once (`TOOL_ERROR`), where the SDK's session would drop it
and leave them waiting for their deadline.

The listing is checked, and each call's arguments and structured result, on a worker thread: bounded
and linear (`agent_env.mcp._schemas`), but a server's to make large.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from agent_env._errors import AgentEnvError, StateError
from agent_env.mcp._require import require_mcp_extra

require_mcp_extra()

import anyio  # noqa: E402
import httpx  # noqa: E402
import pydantic  # noqa: E402
from mcp import ClientSession, McpError, types  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from agent_env._contracts.mcp import McpEnvDefinition, ServerStarter  # noqa: E402
from agent_env._contracts.mcp_settings import SEED_VARIABLE  # noqa: E402
from agent_env._error_types import ENDING_CODES, EpisodeError, ErrorCode  # noqa: E402
from agent_env._threads import run_sync  # noqa: E402
from agent_env.mcp._limits import LOCAL, TOO_LARGE, UNREADABLE, CappedTransport  # noqa: E402
from agent_env.mcp._log import ServerLog  # noqa: E402
from agent_env.mcp._stdio import ReadStream, ServerExitedError, StdioServer, WriteStream  # noqa: E402
from agent_env.mcp._tools import McpListingError, McpTool, listed_tools, result_text, result_value  # noqa: E402

CLOSE_TIMEOUT_S = 5.0
"""How long `close()` waits for the session to end (an HTTP session's DELETE) before it cuts it."""
_EXIT_WAIT_S = 1.0

Transport = AbstractAsyncContextManager[tuple[ReadStream, WriteStream]]


class McpToolError(AgentEnvError):
    """A tool a verifier or a simulated user called answered with an error (its `isError` result)."""


class McpEnv:
    """An MCP server's session for one episode: what `context.envs[name]` is for an MCP env.

    The agent's calls come through `run`; a verifier or a simulated user calls a tool with `call`
    (from a sync function) or `acall` (from an async one) and gets its value: the structured result,
    else its text (parsed as JSON when it is JSON).
    """

    def __init__(self, definition: McpEnvDefinition) -> None:
        self.definition = definition
        self.tools: tuple[McpTool, ...] = ()
        self._loop = asyncio.get_running_loop()
        self._process: StdioServer | None = None
        self._starting: asyncio.Future[StdioServer] | None = None
        self._own_folder: Path | None = None
        self._session: ClientSession | None = None
        self._runner: asyncio.Task[None] | None = None
        self._unreadable: asyncio.Future[Exception] = self._loop.create_future()
        """Set, then made anew, when the session is handed what it cannot read: the calls then waiting
        fail at once."""
        self._closing = asyncio.Event()
        self._closed = False
        self._log = ServerLog(definition.name, definition.bundle)

    @classmethod
    async def start(
        cls, definition: McpEnvDefinition, *, folder: Path | None, seed: Mapping[str, Any] | None = None
    ) -> McpEnv:
        """The env with its session open and its tools listed, within the server's `start_timeout_s`;
        else EpisodeError DEPLOY_FAILED saying why, with nothing left running."""
        env = cls(definition)
        try:
            try:
                async with asyncio.timeout(definition.server.start_timeout_s):
                    listed = await env._open(folder, seed)
            except TimeoutError:
                raise env._error(
                    ErrorCode.DEPLOY_FAILED,
                    f"did not start within its start_timeout_s of {definition.server.start_timeout_s:g} s"
                    f"{await env._why_lost(wait_s=0)}: raise [mcp.{definition.name}] start_timeout_s if it "
                    "needs longer",
                ) from None
            try:
                env.tools = await run_sync(listed_tools, definition.name, definition.server, listed)
            except McpListingError as exc:
                raise env._error(
                    ErrorCode.DEPLOY_FAILED, f"lists tools the bundle cannot offer: {exc}"
                ) from None
            env._say_what_is_not_checked()
        except BaseException:
            await env.close()
            raise
        return env

    @property
    def name(self) -> str:
        return self.definition.name

    def _say_what_is_not_checked(self) -> None:
        """Say once in the log each tool that is not offered, and what each leaves to the server."""
        for tool in self.tools:
            if tool.refused is not None:
                message = (
                    f"lists tool '{tool.name}', which is not offered: {tool.refused}; its other tools are"
                )
                self._log.say_once(f"refused {tool.name}", message)
            for kind, checks in (("input", tool.checks), ("output", tool.output)):
                if checks is not None and checks.left_to_server:
                    message = (
                        f"lists tool '{tool.name}', whose {kind} schema has what is not checked here, but "
                        f"left to the server: {'; '.join(checks.left_to_server)}"
                    )
                    self._log.say_once(f"left {kind} {tool.name}", message)

    async def run(self, tool: McpTool, arguments: Mapping[str, Any]) -> str:
        """The agent's call: arguments checked against the tool's schema, then its result as text; an
        `isError` result is TOOL_ERROR (the turn stays open)."""
        result = await self._call(tool, arguments)
        if result.isError:
            raise EpisodeError(ErrorCode.TOOL_ERROR, f"{tool.name} failed: {result_text(result)}")
        return result_text(result)

    async def acall(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call `tool` (as the agent names it) and return its value; McpToolError if the call cannot be
        made or the tool answers with an error (a server gone, or past its deadline, is the episode's
        end: EpisodeError). For an async verifier or user function; a sync one calls `call`."""
        found = next((t for t in self.tools if t.name == tool), None)
        if found is None:
            listed = ", ".join(t.name for t in self.tools) or "none"
            raise McpToolError(f"MCP server '{self.name}' lists no tool '{tool}' (tools: {listed})")
        if found.refused is not None:
            raise McpToolError(f"tool '{tool}' of MCP server '{self.name}' is not offered: {found.refused}")
        try:
            result = await self._call(found, arguments or {})
        except EpisodeError as exc:
            if exc.code in ENDING_CODES:
                raise
            raise McpToolError(f"tool '{tool}' of MCP server '{self.name}': {exc.message}") from None
        if result.isError:
            raise McpToolError(f"tool '{tool}' of MCP server '{self.name}' failed: {result_text(result)}")
        return result_value(result)

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """`acall`, from a sync verifier or user function (which runs on a worker thread)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            raise StateError(
                f"context.envs['{self.name}'].call(...) blocks: in an async function, await "
                f"context.envs['{self.name}'].acall(...) instead"
            )
        return asyncio.run_coroutine_threadsafe(self.acall(tool, arguments), self._loop).result()

    async def close(self) -> None:
        """End the session and stop a stdio server with all it started; never raises, runs once."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        runner = self._runner
        # An open session ends cleanly (an HTTP one is deleted); one still starting is cut.
        if (
            runner is not None
            and not runner.done()
            and (self._session is None or not (await asyncio.wait({runner}, timeout=CLOSE_TIMEOUT_S))[0])
        ):
            runner.cancel()
            await asyncio.wait({runner}, timeout=CLOSE_TIMEOUT_S)
        if runner is not None and runner.done() and not runner.cancelled():
            runner.exception()  # what ended it was told to any call it failed; none is left unread
        self._session = None
        starting = self._starting
        if self._process is None and starting is not None:
            await asyncio.wait({starting}, timeout=CLOSE_TIMEOUT_S)
            if starting.done() and not starting.cancelled() and starting.exception() is None:
                self._process = starting.result()
        if self._process is not None:
            await self._process.stop()
        if self._own_folder is not None:
            shutil.rmtree(self._own_folder, ignore_errors=True)

    async def _open(self, folder: Path | None, seed: Mapping[str, Any] | None) -> list[types.Tool]:
        server = self.definition.server
        if server.command is not None:
            cwd = server.working_folder(self.definition.bundle) or folder
            if cwd is None:
                cwd = self._own_folder = Path(tempfile.mkdtemp(prefix=f"agent-env-mcp-{self.name}-"))
            env = dict(server.env)
            if seed is not None:
                env[SEED_VARIABLE] = json.dumps(seed, ensure_ascii=False)
            # Shielded: a start cut short by its deadline still hands its process to close() to stop.
            self._starting = asyncio.ensure_future(
                StdioServer.start(
                    server.command,
                    server.args,
                    env,
                    cwd,
                    max_message_bytes=server.max_result_bytes,
                    log=self._log,
                )
            )
            try:
                self._process = await asyncio.shield(self._starting)
            except OSError as exc:
                raise self._error(ErrorCode.DEPLOY_FAILED, f"could not start: {exc}") from None
            transport: Transport = self._process.streams()
        else:
            assert server.url is not None
            transport = _http(
                server.url, server.headers, server.start_timeout_s, server.max_result_bytes, log=self._log
            )
        opened: asyncio.Future[list[types.Tool]] = self._loop.create_future()
        self._runner = asyncio.ensure_future(self._run(transport, opened))
        unreadable = self._unreadable
        starting: set[asyncio.Future[Any]] = {opened, self._runner, unreadable}
        await asyncio.wait(starting, return_when=asyncio.FIRST_COMPLETED)
        if not opened.done() and unreadable.done():
            raise self._error(ErrorCode.DEPLOY_FAILED, f"failed to start: {_unreadable(unreadable)}")
        if not opened.done():
            raise self._error(ErrorCode.DEPLOY_FAILED, f"failed to start{await self._why_lost()}")
        return opened.result()

    async def _run(self, transport: Transport, opened: asyncio.Future[list[types.Tool]]) -> None:
        """The session's life: started, tools listed (every page), then held open until `close()`."""
        async with (
            transport as (read, write),
            ClientSession(read, write, message_handler=self._incoming) as session,
        ):
            await session.initialize()
            tools: list[types.Tool] = []
            cursor: str | None = None
            while True:
                page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
                tools.extend(page.tools)
                cursor = page.nextCursor
                if not cursor:
                    break
            self._session = session
            opened.set_result(tools)
            await self._closing.wait()

    async def _incoming(self, message: Any) -> None:
        """What the session hands on besides answers: requests and notifications are left to it (as its
        own handler does); an error, a message its transport could not read, fails the calls waiting."""
        if isinstance(message, Exception):
            unreadable, self._unreadable = self._unreadable, self._loop.create_future()
            unreadable.set_result(message)
            what = f"{_unreadable(unreadable)}: the calls waiting for an answer failed"
            self._log.say_once("unreadable", what)

    async def _call(self, tool: McpTool, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """`tool` called with `arguments` once they meet its schema (INVALID_ARGUMENTS), its structured
        content checked by its output schema, all within `call_timeout_s`."""
        limit = self.definition.server.call_timeout_s
        try:
            async with asyncio.timeout(limit):
                checked = await run_sync(tool.validate, arguments)
                result = await self._answer(tool, checked)
                if tool.output is not None and not result.isError:
                    problems = await run_sync(tool.result_problems, result.structuredContent)
                    if problems:
                        raise EpisodeError(
                            ErrorCode.TOOL_ERROR,
                            f"{tool.name} failed: MCP server '{self.name}' answered structured content "
                            f"its output schema refuses: {'; '.join(problems)}",
                        )
                return result
        except TimeoutError:
            raise self._error(
                ErrorCode.DEADLINE_EXCEEDED,
                f"did not answer {tool.name} within its call_timeout_s of {limit:g} s: the episode ended; "
                f"raise [mcp.{self.name}] call_timeout_s if it needs longer",
            ) from None

    async def _answer(self, tool: McpTool, arguments: dict[str, Any]) -> types.CallToolResult:
        """The server's answer to the call, raced against the session's end and what it cannot read."""
        session, runner = self._session, self._runner
        if session is None or runner is None or runner.done():
            raise self._error(ErrorCode.ENV_FAILED, f"is gone{await self._why_lost()}")
        params = types.CallToolRequestParams(name=tool.remote, arguments=arguments)
        request = types.ClientRequest(types.CallToolRequest(params=params))
        call = asyncio.ensure_future(session.send_request(request, types.CallToolResult))
        unreadable = self._unreadable
        racing: set[asyncio.Future[Any]] = {call, runner, unreadable}
        try:
            await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not call.done():
                call.cancel()
        if runner.done():
            raise self._error(ErrorCode.ENV_FAILED, f"stopped during {tool.name}{await self._why_lost()}")
        if not call.done() or call.cancelled():
            raise EpisodeError(
                ErrorCode.TOOL_ERROR,
                f"{tool.name} failed: MCP server '{self.name}' {_unreadable(unreadable)}",
            )
        try:
            return call.result()
        except McpError as exc:
            if exc.error.code == types.CONNECTION_CLOSED and exc.error.data != LOCAL:  # the session ended
                raise self._error(
                    ErrorCode.ENV_FAILED, f"stopped during {tool.name}{await self._why_lost()}"
                ) from None
            raise self._failed(tool, exc) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            what = f"stopped during {tool.name} (its session ended: {type(exc).__name__})"
            raise self._error(ErrorCode.ENV_FAILED, what) from None
        except pydantic.ValidationError as exc:
            raise EpisodeError(
                ErrorCode.TOOL_ERROR,
                f"{tool.name} failed: MCP server '{self.name}' answered with what is not a tool's result "
                f"({exc.error_count()} problems, the first: {exc.errors()[0]['msg']})",
            ) from None

    def _failed(self, tool: McpTool, exc: McpError) -> EpisodeError:
        """The error a call answered with, worded: an answer dropped here, or the server's own."""
        error, limit_bytes = exc.error, self.definition.server.max_result_bytes
        if error.code == TOO_LARGE and error.data == LOCAL:
            return EpisodeError(
                ErrorCode.TOOL_ERROR,
                f"{tool.name} failed: MCP server '{self.name}' answered with a message over its "
                f"max_result_bytes of {limit_bytes} bytes, which was dropped unread: make the tool "
                f"answer less, or raise [mcp.{self.name}] max_result_bytes",
            )
        if error.code == UNREADABLE and error.data == LOCAL:
            return EpisodeError(
                ErrorCode.TOOL_ERROR, f"{tool.name} failed: MCP server '{self.name}' {error.message}"
            )
        return EpisodeError(ErrorCode.TOOL_ERROR, f"{tool.name} failed: {error.message}")

    async def _why_lost(self, *, wait_s: float = _EXIT_WAIT_S) -> str:
        """Why the session ended, worded for an error: how the server's process exited (waiting up to
        `wait_s` for it) or the transport's error, and the last lines of its stderr."""
        parts = []
        if self._process is not None and (code := await self._process.exited(wait_s)) is not None:
            parts.append(f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}")
        runner = self._runner
        if runner is not None and runner.done() and not runner.cancelled():
            cause = _leaf(runner.exception())
            if cause is not None and not isinstance(cause, ServerExitedError):
                parts.append(f"{type(cause).__name__}: {cause}")
        if self._process is not None and (tail := self._process.stderr_tail()):
            parts.append(f"its stderr ended: {tail}")
        return f" ({'; '.join(parts)})" if parts else ""

    def _error(self, code: ErrorCode, what: str) -> EpisodeError:
        server = self.definition.server
        return EpisodeError(code, f"MCP server '{self.name}' ({server.transport}: {server.where}) {what}")


def _unreadable(unreadable: asyncio.Future[Exception]) -> str:
    """What the session was handed and could not read, worded for an error."""
    error = unreadable.result()
    if isinstance(error, pydantic.ValidationError) and error.errors():
        why = error.errors()[0]["msg"]
    else:
        why = f"{type(error).__name__}: {next(iter(str(error).splitlines()), '')}"
    return f"sent what is not a JSON-RPC message ({why})"


def _leaf(error: BaseException | None) -> BaseException | None:
    """The first error inside an exception group (the task groups' way of raising), or `error`."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


@asynccontextmanager
async def _http(
    url: str, headers: Mapping[str, str], connect_timeout_s: float, max_message_bytes: int, *, log: ServerLog
) -> AsyncIterator[tuple[ReadStream, WriteStream]]:
    """A streamable HTTP session's streams; reads are left unbounded, since each call has its deadline,
    and each response's body is capped (`CappedTransport`)."""
    timeout = httpx.Timeout(connect_timeout_s, read=None)
    transport = CappedTransport(max_message_bytes, log=log)
    async with (
        httpx.AsyncClient(headers=dict(headers), timeout=timeout, transport=transport) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
    ):
        yield read, write


REGISTERED: ServerStarter = McpEnv.start
"""What this module registers (pyproject.toml), held to the engine's contracts by the type checker."""
