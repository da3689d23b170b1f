"""Sessions that hold the server's capacity: each held by a client connected to `/ws` now.

OpenEnv counts a session against `max_concurrent_envs` from the moment it is made until it is
destroyed; its `/ws` handler destroys its session when the connection ends. Sessions made any other
way (HTTP `/mcp`'s `openenv/session/create`, which this server does not serve) stayed until a close
that might never come, and filled the server for good. `SessionServer` is OpenEnv's `HTTPEnvServer`
hooked where it creates a session (`agent_env._private.openenv_server`): a WebSocket handler that
asks for a session marks its connection's `ClientLink`, so `/status` and the capacity refusal can
say how many sessions connected clients hold and how many are held without one (which should always
be none). `own_sessions_only` keeps a session to the connection that opened it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect

from agent_env._private.openenv_core import Environment, SessionCapacityError, WSErrorCode, WSErrorResponse
from agent_env._private.openenv_server import CreateSession, HookedEnvServer
from agent_env.client._wire import SessionCounts, capacity_message
from agent_env.openenv._calls import CURRENT_LINK, ClientLink

WebSocketEndpoint = Callable[[WebSocket], Awaitable[None]]

ATTACH_REFUSED = (
    "this server does not attach a connection to an existing session (the `session_id` query "
    "parameter): a session lives only as long as the /ws connection that opened it. Connect to /ws "
    "without `session_id` to open a session of your own"
)
"""The message of the error frame a `/ws?session_id=...` connection gets before it is closed."""

_POLICY_VIOLATION = 1008


class SessionServer(HookedEnvServer):
    """OpenEnv's server, knowing which of its sessions a connected WebSocket client holds.

    `links` is the server's set of open connections (`WatchDisconnects` keeps it).
    """

    def __init__(self, *args: Any, links: set[ClientLink], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._links = links

    def counts(self) -> SessionCounts:
        """The sessions held now, by kind; on the server's event loop."""
        held: int = self.active_sessions
        websocket = min(held, sum(1 for link in self._links if link.holds_session))
        return SessionCounts(held=held, websocket=websocket, without_client=held - websocket)

    async def create_session_with(self, create: CreateSession) -> tuple[str, Environment]:
        # The link is marked before OpenEnv takes the slot, so a session being made for a client
        # never shows as held without one; `counts` bounds the marked links by what is held.
        link = CURRENT_LINK.get()
        if link is not None:
            link.holds_session = True
        try:
            made = await create()
        except SessionCapacityError as full:
            if link is not None:
                link.holds_session = False
            counts = self.counts()
            raise SessionCapacityError(
                counts.held, full.max_sessions, capacity_message(counts, full.max_sessions)
            ) from None
        except BaseException:
            if link is not None:
                link.holds_session = False
            raise
        return made


def own_sessions_only(endpoint: WebSocketEndpoint) -> WebSocketEndpoint:
    """OpenEnv's `/ws` handler, refusing a connection that names a session to attach to.

    OpenEnv lets `/ws?session_id=<id>` attach to an existing session, for HTTP MCP sessions; here
    there are none, and the only sessions it could attach to are other connections' own, whose
    episodes a second client would then play. Such a connection gets an error frame, then a close.
    """

    async def websocket_endpoint(websocket: WebSocket) -> None:
        if "session_id" not in websocket.query_params:
            await endpoint(websocket)
            return
        await websocket.accept()
        refusal = WSErrorResponse(data={"message": ATTACH_REFUSED, "code": WSErrorCode.SESSION_ERROR})
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            await websocket.send_text(refusal.model_dump_json())
            await websocket.close(_POLICY_VIOLATION)

    return websocket_endpoint
