"""Notice a WebSocket client leaving while its session is busy with a call (and screen its frames).

OpenEnv's handler reads the socket only between calls, so a client that disconnects mid-call would
go unnoticed until the call ends (a hung tool: never). This ASGI middleware reads each WebSocket's
messages as they come and hands them on through a small queue, and tells the connection's
`ClientLink` the moment the client is gone, so the call is interrupted and the episode torn down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_env.errors import ErrorCode
from agent_env.openenv.calls import CURRENT_LINK, ClientLink
from agent_env.openenv.frames import screened

log = logging.getLogger("agent_env.openenv")

_READ_AHEAD = 4
"""Messages read ahead per connection: room for a close behind a step, small enough to push back."""

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
        relay = _Relay(ClientLink())
        reader = asyncio.ensure_future(relay.read(receive))
        token = CURRENT_LINK.set(relay.link)
        self.links.add(relay.link)
        try:
            await self.app(scope, relay.receive, relay.sender(send))
        finally:
            self.links.discard(relay.link)
            CURRENT_LINK.reset(token)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


class _Relay:
    def __init__(self, link: ClientLink) -> None:
        self.link = link
        self._queue: asyncio.Queue[Message] = asyncio.Queue(_READ_AHEAD)
        self._last: Message | None = None

    async def read(self, receive: Receive) -> None:
        last = _GONE
        try:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    last = message
                    break
                await self._queue.put(screened(message))
        except Exception:  # the transport broke: for the handler, the client is gone all the same
            log.debug("reading a WebSocket failed", exc_info=True)
        self.link.lost(
            ErrorCode.SHUTTING_DOWN if last.get("code") == _SERVER_RESTART else ErrorCode.CLIENT_GONE
        )
        self._last = last
        if self._queue.full():
            self._queue.get_nowait()  # a step the handler could no longer answer gives way to the news
        self._queue.put_nowait(last)

    def sender(self, send: Send) -> Send:
        """`send`, except that answers to a client already gone are dropped rather than failing."""

        async def send_while_there(message: Message) -> None:
            if self.link.gone and message["type"] == "websocket.send":
                return
            await send(message)

        return send_while_there

    async def receive(self) -> Message:
        if self._last is not None and self._queue.empty():
            return self._last
        return await self._queue.get()
