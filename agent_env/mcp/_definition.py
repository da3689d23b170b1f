"""An MCP env: a server under the name a bundle's agents and tasks use, its tools known once started.

Its tools are whatever the server lists when an episode starts it, so a toolset with an MCP env is
known only once deployed: the Task API lists its tools as null, and a trainer learns them by playing
one of its tasks. `McpEnv.start` (agent_env.mcp._env, the `mcp` extra) starts it: this module is the
declaration alone, below the session that imports it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from agent_env.mcp._config import McpServerConfig
from agent_env.mcp._tools import McpTool


@dataclass(frozen=True)
class McpEnvDefinition:
    """An MCP server, as an env of the bundle at `bundle`; equal to another when its name and server are."""

    name: str
    server: McpServerConfig = field(compare=False)
    bundle: Path = field(compare=False)
    tools: tuple[McpTool, ...] | None = field(default=None, compare=False, repr=False)
    """None until a server has listed them (`listed`)."""
    key: str = field(default="", repr=False)
    """The server's settings in canonical JSON: what equality compares (the settings hold dicts)."""

    has_items: ClassVar[bool] = False
    """An MCP env has no `items()`: the `items` verifier reads it through one of its tools."""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", json.dumps(self.server.model_dump(mode="json"), sort_keys=True))

    def with_tools(self, tools: tuple[McpTool, ...]) -> McpEnvDefinition:
        """The same env with the tools its server listed."""
        return dataclasses.replace(self, tools=tools)

    def tool(self, name: str) -> McpTool | None:
        """The listed tool called `name`, or None (also before the server listed any)."""
        return next((t for t in self.tools or () if t.name == name), None)
