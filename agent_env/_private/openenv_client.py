"""What OpenEnv 0.10's client says only in the text of its exceptions.

`EnvClient` raises an error frame from the server (a refusal for capacity, say) as
`RuntimeError("Server error: <message> (code: <CODE>)")`, and a WebSocket handshake the server
refused as `ConnectionError("Failed to connect to <url>: <websockets' reason>")`, whose reason for a
missing or wrong bearer token ends `HTTP 401`. Neither has a type or an attribute of its own, so the
trainer's side reads their text; this module is the one place that does.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_SERVER_ERROR = re.compile(r"^Server error: (?P<message>.*) \(code: (?P<code>[A-Z_]+)\)$", re.DOTALL)


class ErrorFrame(NamedTuple):
    """An error frame the server sent: its stable code and its message."""

    code: str
    message: str


def error_frame(error: BaseException) -> ErrorFrame | None:
    """The server's error frame that OpenEnv's client raised as `error`; None if `error` is no such frame."""
    found = _SERVER_ERROR.match(str(error)) if isinstance(error, RuntimeError) else None
    return ErrorFrame(found["code"], found["message"]) if found else None


def refused_for_token(text: str) -> bool:
    """Whether a failed connection's text says the server refused its handshake with 401 Unauthorized."""
    return "HTTP 401" in text
