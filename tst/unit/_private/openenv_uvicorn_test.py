"""What `agent_env._private.openenv_uvicorn` expects of uvicorn: a connection's protocol made by
calling the `http` class with its keywords, a WebSocket upgrade that makes the `ws` class's protocol
within `data_received` and hands it the transport, requests that run in the context of the
`data_received` that started them, and its names for its protocols resolved through its tables."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol
from websockets.sync.client import connect

from agent_env._private.openenv_uvicorn import HTTP_KEYWORDS, protocol_classes

pytestmark = pytest.mark.needs("openenv_installed")

ANSWER_S = 10.0
READING: contextvars.ContextVar[str] = contextvars.ContextVar("reading", default="none")
seen: list[tuple[str, Any]] = []


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers an HTTP request, and a WebSocket's first message, with the context's `READING`."""
    if scope["type"] == "http":
        body = READING.get().encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"%d" % len(body))],
            }
        )
        await send({"type": "http.response.body", "body": body})
    elif scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        await receive()
        await send({"type": "websocket.send", "text": READING.get()})
        await send({"type": "websocket.close"})


class Http(H11Protocol):
    """uvicorn's HTTP protocol, recording how it is made and reading within `READING`."""

    def __init__(self, **keywords: Any) -> None:
        seen.append(("http", sorted(keywords)))
        super().__init__(**keywords)

    def data_received(self, data: bytes) -> None:
        entered = READING.set("set in data_received")
        try:
            super().data_received(data)
        finally:
            READING.reset(entered)


def websocket_class() -> Any:
    ws = protocol_classes("auto", "websockets-sansio")[1]
    assert ws is not None

    class WebSocket(ws):  # type: ignore[misc,valid-type]
        def __init__(self, **keywords: Any) -> None:
            seen.append(("ws", (sorted(keywords), READING.get())))
            super().__init__(**keywords)

        def connection_made(self, transport: Any) -> None:
            seen.append(("ws made", transport.get_protocol() is self))
            super().connection_made(transport)

    return WebSocket


@contextlib.contextmanager
def served(**options: Any) -> Iterator[str]:
    listener = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="off", **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + ANSWER_S
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(ANSWER_S)
        listener.close()


def test_uvicorn_still_makes_a_connections_protocol_by_calling_the_http_class_with_its_keywords() -> None:
    seen.clear()
    with served(http=Http, ws="none") as url:
        answer = httpx.get(url, timeout=ANSWER_S)

    assert seen == [("http", sorted(HTTP_KEYWORDS))]
    assert answer.text == "set in data_received", "the request ran outside data_received's context"


def test_uvicorn_still_makes_an_upgraded_connections_protocol_within_data_received_then_hands_it_over() -> (
    None
):
    seen.clear()
    with served(http=Http, ws=websocket_class()) as url, connect(url.replace("http", "ws")) as websocket:
        websocket.send(json.dumps({}))
        answer = websocket.recv(timeout=ANSWER_S)

    assert seen == [
        ("http", sorted(HTTP_KEYWORDS)),
        ("ws", (sorted(HTTP_KEYWORDS[:3]), "set in data_received")),
        ("ws made", False),  # handed the transport before it becomes the transport's protocol
    ]
    assert answer == "set in data_received", "the WebSocket's task ran outside data_received's context"


def test_uvicorn_still_resolves_its_protocol_names_through_its_tables() -> None:
    http, ws = protocol_classes("h11", "none")
    auto_http, auto_ws = protocol_classes()

    assert (http, ws) == (H11Protocol, None)
    assert isinstance(auto_http, type) and issubclass(auto_http, asyncio.Protocol)
    assert isinstance(auto_ws, type) and issubclass(auto_ws, asyncio.Protocol)
    assert protocol_classes(Http, None) == (Http, None)
