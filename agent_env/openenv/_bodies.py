"""What the server takes from an HTTP request's body, and what it says back of one it refuses.

Every body the server reads is a few hundred bytes (a split's name, an index), yet it read any: a
1 GB POST to the Task API, with no token set, took the server to 3.3 GiB, and the 422 that answered
it echoed the whole body back. `BoundedBodies` refuses a body over `MAX_BODY_BYTES` with 413 before
reading it, when its `Content-Length` says so, or the moment a chunked one's chunks add up to more,
and closes the connection rather than read the rest. (Starlette's own body limit is newer than
the Starlette this extra allows, answers in plain text and reads the rest of the body.)

`validation_refused` answers a request that does not fit its route (FastAPI's 422) with what was
wrong and where, never with the input: FastAPI's own answer carries each bad value whole.
"""

from __future__ import annotations

import json

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 1 << 20
"""The largest request body the server reads (1 MiB); the Task API's are a few hundred bytes."""

_SHOWN = 100
"""The most characters of a name from the request (a field's) a refusal shows."""


class BoundedBodies:
    """Refuse, with 413, an HTTP request whose body is over `max_bytes`, reading no more of it."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared, chunked = _framing(scope)
        if declared is not None and declared > self.max_bytes:
            await _too_large(send, self.max_bytes)
            return
        if not chunked:  # no body, or one the server (h11) keeps to its Content-Length
            await self.app(scope, receive, send)
            return
        counted = _Counted(receive, send, self.max_bytes)
        await self.app(scope, counted.receive, counted.send)


class _Counted:
    """A chunked body, counted as it streams; past the bound, the refusal is sent, the app is told the
    client went away, and what the app sends after that is dropped."""

    def __init__(self, receive: Receive, send: Send, max_bytes: int) -> None:
        self._receive = receive
        self._send = send
        self._max_bytes = max_bytes
        self._read = 0
        self._started = False
        self._refused = False

    async def receive(self) -> Message:
        if self._refused:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] == "http.request":
            self._read += len(message.get("body", b""))
            if self._read > self._max_bytes:
                self._refused = True
                if not self._started:
                    await _too_large(self._send, self._max_bytes)
                return {"type": "http.disconnect"}
        return message

    async def send(self, message: Message) -> None:
        if self._refused:
            return
        if message["type"] == "http.response.start":
            self._started = True
        await self._send(message)


def _framing(scope: Scope) -> tuple[int | None, bool]:
    """The body's declared length (None: not declared, or not a number), and whether it is chunked."""
    declared: int | None = None
    chunked = False
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                declared = None
        elif name == b"transfer-encoding":
            chunked = True
    return declared, chunked


async def _too_large(send: Send, max_bytes: int) -> None:
    body = json.dumps(
        {"detail": f"the request's body is over {max_bytes} bytes, the most this server reads"}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),  # the rest of the body is never read
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def validation_refused(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 for a request that does not fit its route: each problem's type, place and
    message, without the value it was given (FastAPI's own answer echoes each, whole)."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    return JSONResponse(
        {"detail": [_problem(error) for error in errors]},
        status_code=422,
    )


def _problem(error: object) -> dict[str, object]:
    found = error if isinstance(error, dict) else {}
    return {
        "type": str(found.get("type", "")),
        "loc": [part if isinstance(part, int) else _shown(str(part)) for part in found.get("loc", ())],
        "msg": _shown(str(found.get("msg", "")), 10 * _SHOWN),
    }


def _shown(text: str, most: int = _SHOWN) -> str:
    """`text`, cut to `most` characters: a key of the request's is shown, never a megabyte of one."""
    return text if len(text) <= most else text[:most] + "..."
