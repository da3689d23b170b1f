"""Notice a WebSocket client leaving while its session is busy with a call (and screen its frames).

OpenEnv's handler reads the socket only between calls, so a client that disconnects mid-call would
go unnoticed until the call ends (a hung tool: never). This ASGI middleware hands the handler each
WebSocket message as it reads it; while a call runs longer than `LONG_S`, it reads the
messages ahead, and tells the connection's `ClientLink` the moment the client is gone, so the call is
interrupted and the episode torn down. A quick call is not read ahead of: that would cost every
message one more turn of the event loop, a tenth of a bare step's time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_env._error_types import ErrorCode
from agent_env.openenv._calls import CURRENT_LINK, ClientLink
from agent_env.openenv._frames import screened

log = logging.getLogger("agent_env.openenv")

_READ_AHEAD = 4
"""Messages read ahead during a call: room for a close behind a step, few enough to push back."""

_GONE: Message = {"type": "websocket.disconnect", "code": 1006}
_SERVER_RESTART = 1012
"""The close code uvicorn sends every WebSocket when the server shuts down."""


class WatchDisconnects:
    """ASGI middleware: one `ClientLink` per WebSocket, visible to the handler's calls.

    `links` holds the links of the connections open now, so the server can count them and, when it
    shuts down, interrupt their calls.
    """

    def __init__(self, app: ASGIApp, links: set[ClientLink]) -> None:
        self.app = app
        self.links = links

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        relay = _Relay(receive)
        token = CURRENT_LINK.set(relay.link)
        self.links.add(relay.link)
        try:
            await self.app(scope, relay.receive, relay.sender(send, _client(scope)))
        finally:
            self.links.discard(relay.link)
            CURRENT_LINK.reset(token)
            await relay.stop()


class _Relay:
    """One connection's messages, handed to its handler; at most one read of the socket at a time,
    by the handler itself or, during a long call, by a reader task that keeps them in `_ahead`."""

    def __init__(self, receive: Receive) -> None:
        self.link = ClientLink(read_ahead=self._start_reader)
        self._receive = receive
        self._ahead: deque[Message] = deque()
        self._last: Message | None = None
        self._reading = False
        self._reader: asyncio.Task[None] | None = None
        self._arrived: asyncio.Future[None] | None = None

    async def receive(self) -> Message:
        while not self._ahead:
            if self._last is not None:
                return self._last
            if self._reader is None:
                self._reading = True
                try:
                    return await self._take()
                finally:
                    self._reading = False
            self._arrived = asyncio.get_running_loop().create_future()
            await self._arrived
        return self._ahead.popleft()

    def sender(self, send: Send, client: str) -> Send:
        """`send`, except that answers to a client gone are dropped rather than failing: those to one
        already known gone, and the one whose send fails because it went (the server closed its side
        on a missed ping, or the socket broke), which is logged in one line and makes it gone."""

        async def send_while_there(message: Message) -> None:
            if message["type"] != "websocket.send":
                await send(message)
                return
            if self.link.gone:
                return
            try:
                await send(message)
            except (
                OSError,
                RuntimeError,
            ) as failed:  # uvicorn's: ClientDisconnected, or sent after its close
                log.info(
                    "WebSocket client %s went away before its answer was sent (%s)",
                    client,
                    str(failed) or type(failed).__name__,
                )
                self._gone(_GONE)

        return send_while_there

    async def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    def _start_reader(self) -> None:
        if self._reader is None and not self._reading and self._last is None:
            self._reader = asyncio.ensure_future(self._read_ahead())

    async def _read_ahead(self) -> None:
        """Read while a call runs, until the client leaves or `_READ_AHEAD` messages wait."""
        try:
            while self._last is None and len(self._ahead) < _READ_AHEAD:
                message = await self._take()
                if message is not self._last:
                    self._ahead.append(message)
                if self._arrived is not None and not self._arrived.done():
                    self._arrived.set_result(None)
                if not self.link.busy:
                    return
        finally:
            self._reader = None

    async def _take(self) -> Message:
        """The next message; once it is a disconnect, that is `_last`, and what waits unread is dropped:
        a client gone gets no answers."""
        try:
            message = await self._receive()
        except Exception:  # the transport broke: for the handler, the client is gone all the same
            log.debug("reading a WebSocket failed", exc_info=True)
            message = _GONE
        if message["type"] != "websocket.disconnect":
            return screened(message)
        self._gone(message)
        return message

    def _gone(self, message: Message) -> None:
        """The client is gone (`message` says how): what waits unread is dropped, the handler's next
        read is `message`, and the link is told."""
        if self._last is not None:
            return
        self._last = message
        self._ahead.clear()
        if self._arrived is not None and not self._arrived.done():
            self._arrived.set_result(None)
        self.link.lost(
            ErrorCode.SHUTTING_DOWN if message.get("code") == _SERVER_RESTART else ErrorCode.CLIENT_GONE
        )


def _client(scope: Scope) -> str:
    host, port = scope.get("client") or ("?", 0)
    return f"{host}:{port}"
