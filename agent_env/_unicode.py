"""Valid Unicode: the one rule for the text the framework takes in and hands on.

A Python `str` can hold lone surrogates (U+D800 to U+DFFF), which are not Unicode scalar values:
JSON's `"\\ud800"` escape makes one, and so can a tool. UTF-8 cannot encode them, so such a string
breaks the observation it is sent in and the trajectory it is written to. Text that comes in (a
step's or a reset's fields, a tool's arguments) and holds one is refused, naming where
(`invalid_text`); text the framework hands on (a tool's result, an error's message, a simulated
user's message) has each one replaced by U+FFFD (`valid_text`), and so has JSON that comes in as bytes
from a server the framework is a client of (an MCP server's messages: `valid_json`), before it is
parsed, since a strict parser refuses the whole message for one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

NOT_UNICODE = (
    "is not valid Unicode: it holds a lone surrogate (such as \\ud800 escaped in JSON); send text "
    "that UTF-8 can encode"
)
"""What a refusal says of a string that breaks the rule, after naming it."""

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_JSON_ESCAPES = re.compile(
    rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
"""An escaped backslash, a surrogate pair, or a lone surrogate (in this order, so `\\\\ud800` is text)."""


def invalid_text(value: Any, path: str = "") -> str | None:
    """Where in `value` (a string, or JSON-like lists and objects of them) the first string that is
    not valid Unicode is, as a dotted path (`items.0.name`; `path` itself for `value`); None if none."""
    if isinstance(value, str):
        return path if _SURROGATE.search(value) else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _SURROGATE.search(key):
                return valid_text(where)
            if (found := invalid_text(item, where)) is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if (found := invalid_text(item, f"{path}.{index}" if path else str(index))) is not None:
                return found
    return None


def valid_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD; `text` itself when it has none."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text


def valid_data(value: Any) -> Any:
    """JSON-like `value` with every string (keys too) made valid by `valid_text`."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, Mapping):
        return {valid_data(key): valid_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [valid_data(item) for item in value]
    return value


def valid_json(data: bytes) -> bytes:
    """JSON text `data` with each lone surrogate it escapes (`\\ud800`) escaped as U+FFFD instead, and
    each sequence that is not UTF-8 replaced by U+FFFD; `data` itself when it has neither."""
    if _ESCAPED_SURROGATE.search(data) and (replaced := _JSON_ESCAPES.sub(_valid_escape, data)) != data:
        data = replaced
    try:
        data.decode()
    except UnicodeDecodeError:
        return data.decode(errors="replace").encode()
    return data


def _valid_escape(match: re.Match[bytes]) -> bytes:
    escape = match[0]
    return escape if len(escape) != 6 else b"\\ufffd"
