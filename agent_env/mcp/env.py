"""One episode's MCP env: a session with its server, from the deploy to the teardown.

A stdio server is started per episode, in the episode's sandbox folder when it has one on this host
(else in a temporary folder of its own, or in `cwd`), and stopped with all it started at teardown. A
URL server is shared: each episode opens its own MCP session on it, and closes it at teardown.

The SDK's transports and `ClientSession` live in task groups that must end in the task that began
them, while an episode deploys in one task and tears down in another: so each session runs in a task
of its own (the runner), which starts it, lists the tools, and holds it open until `close()`. Calls
race the runner: a server that dies mid-call ends the call at once (`ENV_FAILED`, naming the server
and why), and every call has `call_timeout_s`, past which the episode ends (`DEADLINE_EXCEEDED`).
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

import httpx  # noqa: E402
from mcp import ClientSession, McpError, types  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from agent_env.errors import ENDING_CODES, EpisodeError, ErrorCode  # noqa: E402
from agent_env.mcp.config import SEED_VARIABLE  # noqa: E402
from agent_env.mcp.limits import TOO_LARGE, CappedTransport  # noqa: E402
from agent_env.mcp.spec import McpEnvSpec  # noqa: E402
from agent_env.mcp.stdio import ReadStream, ServerExitedError, StdioServer, WriteStream  # noqa: E402
from agent_env.mcp.tools import McpListingError, McpTool, listed_tools, result_text, result_value  # noqa: E402

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

    def __init__(self, spec: McpEnvSpec) -> None:
        self.spec = spec
        self.tools: tuple[McpTool, ...] = ()
        self._loop = asyncio.get_running_loop()
        self._process: StdioServer | None = None
        self._starting: asyncio.Future[StdioServer] | None = None
        self._own_folder: Path | None = None
        self._session: ClientSession | None = None
        self._runner: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._closed = False

    @classmethod
    async def start(
        cls, spec: McpEnvSpec, *, folder: Path | None, seed: Mapping[str, Any] | None = None
    ) -> McpEnv:
        """The env with its session open and its tools listed, within the server's `start_timeout_s`;
        else EpisodeError DEPLOY_FAILED saying why, with nothing left running."""
        env = cls(spec)
        try:
            try:
                async with asyncio.timeout(spec.server.start_timeout_s):
                    listed = await env._open(folder, seed)
            except TimeoutError:
                raise env._error(
                    ErrorCode.DEPLOY_FAILED,
                    f"did not start within its start_timeout_s of {spec.server.start_timeout_s:g} s"
                    f"{await env._why_lost(wait_s=0)}: raise [mcp.{spec.name}] start_timeout_s if it "
                    "needs longer",
                ) from None
            try:
                env.tools = listed_tools(spec.name, spec.server, listed)
            except McpListingError as exc:
                raise env._error(
                    ErrorCode.DEPLOY_FAILED, f"lists tools the bundle cannot offer: {exc}"
                ) from None
        except BaseException:
            await env.close()
            raise
        return env

    @property
    def name(self) -> str:
        return self.spec.name

    async def run(self, tool: McpTool, arguments: Mapping[str, Any]) -> str:
        """The agent's call: arguments checked against the tool's schema, then its result as text; an
        `isError` result is TOOL_ERROR (the turn stays open)."""
        checked = tool.validate(arguments)
        result = await self._call(tool, checked)
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
        try:
            result = await self._call(found, found.validate(arguments or {}))
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
        server = self.spec.server
        if server.command is not None:
            cwd = server.working_folder(self.spec.bundle) or folder
            if cwd is None:
                cwd = self._own_folder = Path(tempfile.mkdtemp(prefix=f"agent-env-mcp-{self.name}-"))
            env = dict(server.env)
            if seed is not None:
                env[SEED_VARIABLE] = json.dumps(seed, ensure_ascii=False)
            # Shielded: a start cut short by its deadline still hands its process to close() to stop.
            self._starting = asyncio.ensure_future(
                StdioServer.start(
                    server.command, server.args, env, cwd, max_message_bytes=server.max_result_bytes
                )
            )
            try:
                self._process = await asyncio.shield(self._starting)
            except OSError as exc:
                raise self._error(ErrorCode.DEPLOY_FAILED, f"could not start: {exc}") from None
            transport: Transport = self._process.streams()
        else:
            assert server.url is not None
            transport = _http(server.url, server.headers, server.start_timeout_s, server.max_result_bytes)
        opened: asyncio.Future[list[types.Tool]] = self._loop.create_future()
        self._runner = asyncio.ensure_future(self._run(transport, opened))
        starting: set[asyncio.Future[Any]] = {opened, self._runner}
        await asyncio.wait(starting, return_when=asyncio.FIRST_COMPLETED)
        if not opened.done():
            raise self._error(ErrorCode.DEPLOY_FAILED, f"failed to start{await self._why_lost()}")
        return opened.result()

    async def _run(self, transport: Transport, opened: asyncio.Future[list[types.Tool]]) -> None:
        """The session's life: started, tools listed (every page), then held open until `close()`."""
        async with transport as (read, write), ClientSession(read, write) as session:
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

    async def _call(self, tool: McpTool, arguments: dict[str, Any]) -> types.CallToolResult:
        session, runner = self._session, self._runner
        if session is None or runner is None or runner.done():
            raise self._error(ErrorCode.ENV_FAILED, f"is gone{await self._why_lost()}")
        call = asyncio.ensure_future(session.call_tool(tool.remote, arguments))
        limit, limit_bytes = self.spec.server.call_timeout_s, self.spec.server.max_result_bytes
        racing: set[asyncio.Future[Any]] = {call, runner}
        try:
            async with asyncio.timeout(limit):
                await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError:
            raise self._error(
                ErrorCode.DEADLINE_EXCEEDED,
                f"did not answer {tool.name} within its call_timeout_s of {limit:g} s: the episode ended; "
                f"raise [mcp.{self.name}] call_timeout_s if it needs longer",
            ) from None
        finally:
            if not call.done():
                call.cancel()
        if not call.done() or runner.done():
            raise self._error(ErrorCode.ENV_FAILED, f"stopped during {tool.name}{await self._why_lost()}")
        try:
            return call.result()
        except McpError as exc:
            if exc.error.code == TOO_LARGE:
                raise EpisodeError(
                    ErrorCode.TOOL_ERROR,
                    f"{tool.name} failed: MCP server '{self.name}' answered with a message over its "
                    f"max_result_bytes of {limit_bytes} bytes, which was dropped unread: make the tool "
                    f"answer less, or raise [mcp.{self.name}] max_result_bytes",
                ) from None
            raise EpisodeError(ErrorCode.TOOL_ERROR, f"{tool.name} failed: {exc.error.message}") from None
        except RuntimeError as exc:  # the SDK's check of a result against the tool's output schema
            raise EpisodeError(ErrorCode.TOOL_ERROR, f"{tool.name} failed: {exc}") from None

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
        server = self.spec.server
        return EpisodeError(code, f"MCP server '{self.name}' ({server.transport}: {server.where}) {what}")


def _leaf(error: BaseException | None) -> BaseException | None:
    """The first error inside an exception group (the task groups' way of raising), or `error`."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


@asynccontextmanager
async def _http(
    url: str, headers: Mapping[str, str], connect_timeout_s: float, max_message_bytes: int
) -> AsyncIterator[tuple[ReadStream, WriteStream]]:
    """A streamable HTTP session's streams; reads are left unbounded, since each call has its deadline,
    and each response's body is capped (`CappedTransport`)."""
    timeout = httpx.Timeout(connect_timeout_s, read=None)
    transport = CappedTransport(max_message_bytes)
    async with (
        httpx.AsyncClient(headers=dict(headers), timeout=timeout, transport=transport) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
    ):
        yield read, write
