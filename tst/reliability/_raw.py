"""A raw WebSocket client, and the dock task it plays: how the reliability tests send any frame at all.

The frames go over the socket as any client (not only OpenEnv's) could send them; the answers are
read back as JSON, and the server's `/status` says what it still holds.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

from agent_env._contexts import VerifierContext
from agent_env.openenv import BackgroundServer
from agent_env.testing import FakeTask, calls
from tst.support.tools import add_crate

ANSWER_S = 10.0


def stored(context: VerifierContext) -> float:
    return 1.0 if any(name == "add_crate" for name, _ in calls(context)) else 0.0


def dock(task_id: str, **options: Any) -> FakeTask:
    """A fake task with the dock's `add_crate`, scored 1 once a crate is stored."""
    return FakeTask(task_id, tools=[add_crate], envs=("dock",), score=stored, **options)


class Raw:
    """A WebSocket client that sends whatever frame it is given and reads answers as JSON."""

    def __init__(self, url: str) -> None:
        self._open = contextlib.ExitStack()
        self.socket: ClientConnection = self._open.enter_context(
            connect(url.replace("http://", "ws://") + "/ws", max_size=None)
        )

    def send(self, frame: str | bytes) -> None:
        self.socket.send(frame)

    def answer(self) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self.socket.recv(timeout=ANSWER_S))
        return answer

    def ask(self, kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send(json.dumps({"type": kind, **({"data": data} if data is not None else {})}))
        return self.answer()

    def close(self) -> None:
        self._open.close()


def observation(answer: dict[str, Any]) -> dict[str, Any]:
    assert answer["type"] == "observation", answer
    body: dict[str, Any] = answer["data"]
    return body


def play_on(raw: Raw, crate: str = "C1") -> dict[str, Any]:
    """Store a crate and end the turn; the final answer."""
    called = observation(
        raw.ask("step", {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": crate, "bay": 2}})
    )
    assert called["observation"]["error"] is None, called
    return observation(raw.ask("step", {"kind": "end_turn", "reply": "Stored."}))


def status(server: BackgroundServer) -> dict[str, Any]:
    """What `server` holds now (`GET /tasks/status`)."""
    body: dict[str, Any] = httpx.get(f"{server.url}/tasks/status", timeout=ANSWER_S).json()
    return body
