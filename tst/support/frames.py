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


class NoOpenTurnInstead:
    """ASGI middleware that answers the first tool call's step as a server whose episode has no open
    turn any more answers (its error observation: `turn` null, `done` false), whatever the app answered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.replaced = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def replacing(message: Message) -> None:
            if not self.replaced and message["type"] == "websocket.send" and message.get("text"):
                frame = json.loads(message["text"])
                observation = frame.get("data", {}).get("observation", {})
                if frame.get("type") == "observation" and observation.get("result") is not None:
                    self.replaced = True
                    observation.update(
                        turn=None,
                        result=None,
                        error={
                            "code": "NO_OPEN_TURN",
                            "message": "no turn is open: the episode ended (failed)",
                            "call": "call_tool add_crate",
                        },
                    )
                    frame["data"]["done"] = False
                    message = {**message, "text": json.dumps(frame)}
            await send(message)

        await self.app(scope, receive, replacing)
