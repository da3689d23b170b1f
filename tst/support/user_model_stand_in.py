"""A stand-in for the chat model that plays a simulated user: an OpenAI-compatible chat-completions
server on loopback whose every answer is `answer(messages)`, a function of the conversation it is sent.

It refuses a request without the bearer `API_KEY` (401) or for another model than `MODEL` (404), and
keeps every request's messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

API_KEY = "sk-user-stand-in"
MODEL = "user-stand-in"

Answer = Callable[[list[dict[str, str]]], str]


@dataclass
class UserModelStandIn:
    """The scripted model: what it answers, and the messages of each request it answered."""

    answer: Answer
    requests: list[list[dict[str, str]]] = field(default_factory=list)

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {API_KEY}":
            return _error(401, "Incorrect API key provided.")
        body: dict[str, Any] = await request.json()
        if body.get("model") != MODEL:
            return _error(404, f"The model `{body.get('model')}` does not exist.")
        self.requests.append(body["messages"])
        message = {"role": "assistant", "content": self.answer(body["messages"])}
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": MODEL,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        )


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "error", "code": None}}, status_code=status)
