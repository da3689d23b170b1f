"""What a server says of its sessions: its `/status`, and a bounded wait for its session counts."""

from __future__ import annotations

from typing import Any

import httpx

from agent_env.openenv import BackgroundServer
from tst.support.waiting import until


def status(server: BackgroundServer) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{server.url}/tasks/status", timeout=10).json()
    return body


def held(server: BackgroundServer, websocket: int, without_client: int = 0) -> bool:
    """Whether `/status` soon counts exactly these sessions."""
    expected = {"held": websocket + without_client, "websocket": websocket, "without_client": without_client}
    return until(lambda: status(server)["sessions"] == expected)
