"""An MCP env as the engine knows it: a server under the name a bundle's agents and tasks use, its
tools known once started, and what the engine asks of the session and tools the `mcp` part makes.

Its tools are whatever the server lists when an episode starts it, so a toolset with an MCP env is
known only once deployed: the Task API lists its tools as null, and a trainer learns them by playing
one of its tasks. The `mcp` part (`agent_env.mcp`, the `mcp` extra) starts it, registered as
`mcp.start` (`agent_env._contracts.registry.start_server`): this module is the declaration alone.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from agent_env._contracts.mcp_settings import McpServerConfig


class ServerTool(Protocol):
    """One tool a server lists, as a toolset offers and calls it (the `mcp` part's `McpTool`)."""

    @property
    def name(self) -> str:
        """The name the agent calls it by."""

    @property
    def roles(self) -> frozenset[str] | None: ...

    @property
    def timeout_s(self) -> float | None: ...

    @property
    def refused(self) -> str | None:
        """Why the tool is not offered: it is listed, but no call reaches it; None when offered."""

    @property
    def schema(self) -> dict[str, Any]:
        """The tool as the model sees it, in the shape of a bundle's own tools' schemas."""

    async def call(self, instance: Any, arguments: Mapping[str, Any]) -> str:
        """Call the tool on its episode's session (`instance`), as the agent does."""


class ServerEnv(Protocol):
    """One episode's session with a server (the `mcp` part's `McpEnv`): its listed tools, the calls a
    verifier or a user function makes through it, and its end."""

    @property
    def tools(self) -> tuple[ServerTool, ...]: ...

    async def acall(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Any: ...

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Any: ...

    async def close(self) -> None:
        """End the session and all it started; never raises, runs once."""


@dataclass(frozen=True)
class McpEnvDefinition:
    """An MCP server, as an env of the bundle at `bundle`; equal to another when its name and server are."""

    name: str
    server: McpServerConfig = field(compare=False)
    bundle: Path = field(compare=False)
    tools: tuple[ServerTool, ...] | None = field(default=None, compare=False, repr=False)
    """None until a server has listed them (`listed`)."""
    key: str = field(default="", repr=False)
    """The server's settings in canonical JSON: what equality compares (the settings hold dicts)."""

    has_items: ClassVar[bool] = False
    """An MCP env has no `items()`: the `items` verifier reads it through one of its tools."""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", json.dumps(self.server.model_dump(mode="json"), sort_keys=True))

    def with_tools(self, tools: tuple[ServerTool, ...]) -> McpEnvDefinition:
        """The same env with the tools its server listed."""
        return dataclasses.replace(self, tools=tools)

    def tool(self, name: str) -> ServerTool | None:
        """The listed tool called `name`, or None (also before the server listed any)."""
        return next((t for t in self.tools or () if t.name == name), None)


class ServerStarter(Protocol):
    """What the `mcp` part registers as `mcp.start`: an episode's session with a server, started."""

    async def __call__(
        self, definition: McpEnvDefinition, *, folder: Path | None, seed: Mapping[str, Any] | None
    ) -> ServerEnv: ...
