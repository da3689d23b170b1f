"""MCP servers as a bundle's envs (the `mcp` extra): a server's tools offered to the played agent.

`McpServerConfig` is how a bundle declares one, `McpEnvDefinition` the env it makes, `McpTool` a tool it
lists and `McpEnv` one episode's session with it (what verifiers and simulated users read it through).
The `mcp` SDK is imported only when an episode starts a server (`agent_env.mcp._env`).
"""

from __future__ import annotations

import typing as _typing

from agent_env._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from agent_env._contracts.mcp import McpEnvDefinition as McpEnvDefinition
    from agent_env._contracts.mcp_settings import McpServerConfig as McpServerConfig
    from agent_env.mcp._env import McpEnv as McpEnv, McpToolError as McpToolError
    from agent_env.mcp._tools import McpTool as McpTool
else:
    _lazy_exports(
        __name__,
        {
            "agent_env._contracts.mcp_settings": ["McpServerConfig"],
            "agent_env.mcp._env": ["McpEnv", "McpToolError"],
            "agent_env._contracts.mcp": ["McpEnvDefinition"],
            "agent_env.mcp._tools": ["McpTool"],
        },
    )
