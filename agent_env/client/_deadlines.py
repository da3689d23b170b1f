"""Each call's deadline, as a client gives it to the server."""

from __future__ import annotations

import functools
from dataclasses import dataclass

DEFAULT_RESET_TIMEOUT_S = 300.0
"""The deadline of a reset (deploy) and of an end_turn (the last one runs the verifiers): the one
default of every client, the trainer's `AgentEnv` and eval's `PlaySettings` alike."""
DEFAULT_TOOL_TIMEOUT_S = 60.0
"""The deadline of a tool call, unless the caller names the tool or the tool lists its own."""
DEFAULT_CONNECT_TIMEOUT_S = 10.0
"""The deadline of opening a session (the WebSocket's connection and its first answer)."""


@dataclass(frozen=True)
class Deadlines:
    """Seconds the server gives each call, named as `AgentEnv`'s arguments: `reset_timeout_s` bounds a
    reset (the deploy) and every end_turn (the last one runs the verifiers); a tool call gets
    `tool_timeouts`' deadline if it names the tool, else the tool's own if the server lists one
    (`listed`: `ToolsetSpec.tool_timeouts`), else `tool_timeout_s`."""

    reset_timeout_s: float
    tool_timeout_s: float
    tool_timeouts: tuple[tuple[str, float], ...] = ()
    listed: tuple[tuple[str, float], ...] = ()

    def tool(self, name: str) -> float:
        return self._by_tool.get(name, self.tool_timeout_s)

    @functools.cached_property
    def _by_tool(self) -> dict[str, float]:
        return {**dict(self.listed), **dict(self.tool_timeouts)}
