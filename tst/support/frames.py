"""A recorder of the wire: the WebSocket frames clients send a served app, as the server got them."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class RecordFrames:
    """ASGI middleware that keeps every WebSocket frame clients send, parsed, in arrival order."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.frames: list[dict[str, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def recorded() -> Message:
            message = await receive()
            if message["type"] == "websocket.receive" and message.get("text"):
                self.frames.append(json.loads(message["text"]))
            return message

        await self.app(scope, recorded, send)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [frame["data"] for frame in self.frames if frame.get("type") == kind]
