"""WebSocket frames OpenEnv would end a session over, turned into ones it refuses and survives.

OpenEnv 0.10's handler answers a frame that is not JSON with `INVALID_JSON` and goes on. But a frame
that is JSON and not an object (`[1]`, `"x"`, `null`), one nested deeper than Python's JSON parser
goes, or a binary frame, raises inside it: it answers `SESSION_ERROR` and closes the session, with
its episode. Such a frame is replaced where it stands (so answers keep their order) by an object
whose unknown `type` says what was wrong; the handler answers that with `UNKNOWN_TYPE` and goes on.

So is an `mcp` frame: OpenEnv's MCP bridge over `/ws` can do nothing for an environment that is not
an MCP one but tell a client its session's id and close sessions by id, other connections' included.
"""

from __future__ import annotations

import json

from starlette.types import Message

_SURELY_SHALLOW = 512
"""Frames shorter than this cannot nest deep enough to overflow the parser: only their start is checked."""


def screened(message: Message) -> Message:
    """`message`, or, for a frame OpenEnv's handler would die on, one it answers with an error."""
    if message.get("type") != "websocket.receive":
        return message
    text = message.get("text")
    if text is None:
        return _refused("binary frames are not accepted: send each message as JSON text")
    if len(text) < _SURELY_SHALLOW and text.lstrip().startswith("{") and not _may_name_mcp(text):
        return message
    try:
        value = json.loads(text)
    except RecursionError:
        return _refused("the frame nests deeper than the server parses: flatten it")
    except ValueError:
        return message  # not JSON at all: OpenEnv answers INVALID_JSON itself
    if isinstance(value, dict):
        if value.get("type") == "mcp":
            return _refused("MCP messages are not served: call the tools with step actions")
        return message
    return _refused(
        f'a frame must be a JSON object such as {{"type": "step", "data": {{...}}}}, not {_kind(value)}'
    )


def _may_name_mcp(text: str) -> bool:
    """Whether a frame may have the type `mcp`: it says so, or escapes characters (as `\\u006dcp` would)."""
    return "mcp" in text or "\\" in text


def _refused(why: str) -> Message:
    return {"type": "websocket.receive", "text": json.dumps({"type": f"(invalid frame: {why})"})}


def _kind(value: object) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
