"""The `mcp` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

from agent_env._extras import install_line, require_modules

INSTALL = install_line("mcp")


def require_mcp_extra() -> None:
    """Raise ImportError naming `[mcp]` when a package the extra brings is missing."""
    require_modules(("mcp", "jsonschema", "httpx", "anyio", "re2"), needed_by="an MCP env", install=INSTALL)
