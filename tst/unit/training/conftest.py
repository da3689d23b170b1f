"""What the trainer-side tests share: AgentEnvs closed after each test, and a recorder of the wire."""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_env.training.trl import AgentEnv

Open = Callable[..., AgentEnv]
"""The type of the `open_env` fixture: a URL and AgentEnv's options to an AgentEnv."""


@pytest.fixture
def open_env() -> Iterator[Open]:
    """Make an AgentEnv on a URL (its keywords pass through); each is closed after the test."""
    made: list[AgentEnv] = []

    def make(url: str, **options: Any) -> AgentEnv:
        env = AgentEnv(url, **options)
        made.append(env)
        return env

    yield make
    for env in made:
        with contextlib.suppress(Exception):
            env.close()


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


def trl_tools(environment: object) -> dict[str, Callable[..., Any]]:
    """The tools TRL 1.16 offers for an environment instance, found as its trainers find them."""
    return {
        name: getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
