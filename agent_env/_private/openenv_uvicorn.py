"""uvicorn's connection protocols, as the server wraps them: what a protocol class must be to uvicorn.

`uvicorn.Config(http=..., ws=...)` takes a class for either, besides the names it documents
("auto", "h11", "websockets", ...), but does not document what such a class must do. The server's
connection bounds (`agent_env.openenv._connections`) wrap uvicorn's own classes, and so rely on what
uvicorn 0.30 to 0.54 do with them:

- uvicorn makes each accepted connection's protocol by calling the `http` class with the keywords
  `config`, `server_state`, `app_state` and `_loop`;
- on a WebSocket upgrade, that protocol calls the `ws` class with `config`, `server_state` and
  `app_state`, hands the new protocol `connection_made(transport)` and the request's bytes, then
  makes it the transport's protocol (`transport.set_protocol`), all within its own `data_received`;
- an HTTP request's task, and a WebSocket's, is created within `data_received`, so it runs in a
  copy of the context (`contextvars`) that call ran in.

`protocol_classes` resolves uvicorn's names to its classes through its own tables (`HTTP_PROTOCOLS`,
`WS_PROTOCOLS`, which uvicorn does not document), so what is wrapped is exactly what uvicorn would
have used. This fence imports uvicorn alone; it is the server's (uvicorn comes with the `openenv`
extra, hence its name), and only agent_env.openenv imports it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, cast

from uvicorn.config import HTTP_PROTOCOLS, WS_PROTOCOLS
from uvicorn.importer import import_from_string

ProtocolClass = Callable[..., asyncio.Protocol]
"""What uvicorn calls, with its keywords, to make a connection's protocol."""

HTTP_KEYWORDS = ("config", "server_state", "app_state", "_loop")
"""The keywords uvicorn calls its `http` class with (the `ws` class gets the first three)."""


def protocol_classes(
    http: str | ProtocolClass = "auto", ws: str | ProtocolClass | None = "auto"
) -> tuple[ProtocolClass, ProtocolClass | None]:
    """The classes uvicorn would use for its `http=` and `ws=` options (None: no WebSockets)."""
    return _resolved(http, HTTP_PROTOCOLS), _resolved(ws, WS_PROTOCOLS)


def _resolved(choice: Any, table: Mapping[str, str | None]) -> Any:
    if not isinstance(choice, str):
        return choice
    path = table.get(choice, choice)
    return None if path is None else cast(ProtocolClass, import_from_string(path))
