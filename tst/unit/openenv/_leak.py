"""A stand-in for the route the server no longer serves: one that makes a session no client holds.

HTTP `/mcp`'s `openenv/session/create` made such sessions, and they held capacity until closed. The
tests that show how the server counts and reports them add this route to a real app: it asks the
app's own OpenEnv server for a session from an HTTP request, as that route did, and never closes it.
"""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from agent_env.openenv import BackgroundServer

LEAK = "/leak-a-session"


def with_a_session_leak(app: FastAPI) -> FastAPI:
    """`app`, plus `POST /leak-a-session`, which makes a session outside any WebSocket."""
    server = app.state.openenv_server

    @app.post(LEAK)
    async def leak_a_session() -> dict[str, str]:
        session_id, _ = await server._create_session()
        return {"session_id": session_id}

    return app


def leak_a_session(server: BackgroundServer) -> None:
    """Have `server` (serving `with_a_session_leak`) make a session that no client will ever close."""
    answer = httpx.post(server.url + LEAK, timeout=10)
    assert answer.status_code == 200, answer.text
