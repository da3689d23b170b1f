"""What the log says of an MCP server's misbehaviour: each thing once a process, for each server.

A server that sends text that is not valid Unicode, or lists a tool that is not offered, does so at
every episode: the bundle's author needs to read it once, not once an episode.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("agent_env.mcp")

_MAX_SAID = 1024
"""How many different things the log says once; past that (a server making up new ones) it says no more."""
_said: set[tuple[Path, str, str]] = set()


@dataclass(frozen=True)
class ServerLog:
    """The log of MCP server `name` of the bundle at `bundle`."""

    name: str
    bundle: Path

    def say_once(self, what: str, message: str) -> None:
        """Log `message` as a warning the first time the server does `what` in this process."""
        key = (self.bundle, self.name, what)
        if key in _said or len(_said) >= _MAX_SAID:
            return
        _said.add(key)
        log.warning("MCP server '%s' %s", self.name, message)

    def not_unicode(self) -> None:
        """Say once that the server sent text that was made valid Unicode (`_unicode.valid_json`)."""
        self.say_once(
            "not Unicode",
            "sent text that is not valid Unicode (a lone surrogate, or bytes that are not UTF-8): each was "
            "replaced by U+FFFD",
        )
