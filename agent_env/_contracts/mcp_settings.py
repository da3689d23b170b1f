"""An MCP server as a bundle declares it: `[mcp.NAME]` in `bundle.toml`, or `envs/NAME.toml`.

A server is either a command the episode starts and talks to over stdio (`command`, `args`, `env`,
`cwd`), or a URL it reaches over streamable HTTP (`url`, `headers`). Strings may hold `${bundle}`
(the bundle's folder), `${python}` (the interpreter that loads it) and `${env:NAME}` (a variable of
the loading process's environment, so a secret stays out of the bundle); loading resolves them.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_env._errors import ArgumentError
from agent_env._names import IDENTIFIER

SEED_VARIABLE = "AGENT_ENV_SEED"
"""The variable in which a stdio server finds the task's seed data for its env, as JSON (if any)."""
DEFAULT_START_TIMEOUT_S = 10.0
DEFAULT_CALL_TIMEOUT_S = 30.0
DEFAULT_MAX_RESULT_BYTES = 1 << 20
"""1 MiB: far above what a tool's answer for an agent is (bash's output is cut at 16 KiB), far below
what would stall a server to read."""

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


class McpServerConfig(BaseModel):
    """One MCP server: how to reach it, its deadlines, and how its tools meet the bundle's rules."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: str | None = Field(None, min_length=1, description="stdio: the program to start, per episode.")
    args: tuple[str, ...] = Field((), description="stdio: the program's arguments.")
    env: dict[str, str] = Field(
        default_factory=dict, description="stdio: variables set for it, beside PATH, HOME, LANG and the like."
    )
    cwd: str | None = Field(
        None,
        description="stdio: its working folder, relative to the bundle (default: the episode's sandbox "
        "folder when the agent has one on this host, else a temporary folder of the episode's).",
    )
    url: str | None = Field(
        None,
        pattern=r"^https?://",
        description="streamable HTTP: the server's endpoint, shared by every episode.",
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="streamable HTTP: sent with each request."
    )
    start_timeout_s: float = Field(
        DEFAULT_START_TIMEOUT_S,
        gt=0,
        description="Until it has started, answered initialize and listed its tools.",
    )
    call_timeout_s: float = Field(
        DEFAULT_CALL_TIMEOUT_S, gt=0, description="Each call's deadline; past it the episode ends."
    )
    max_result_bytes: int = Field(
        DEFAULT_MAX_RESULT_BYTES,
        gt=0,
        description="The most one message from the server may hold (a stdio line, or an HTTP response's "
        "body): a call answered with more fails (TOOL_ERROR), the rest unread.",
    )
    roles: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="Tool name -> the roles it is limited to (as @tool(roles=...))."
    )
    rename: dict[str, str] = Field(
        default_factory=dict,
        description="The server's name of a tool -> the name the agent calls it by (for names a trainer "
        "cannot call, such as 'read-file').",
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ArgumentError(
                "give either 'command' (a server started per episode, over stdio) or 'url' (a server "
                "reached over streamable HTTP), not both and not neither"
            )
        transport_fields = ("args", "env", "cwd") if self.url is not None else ("headers",)
        if stray := [name for name in transport_fields if name in self.model_fields_set]:
            other = "'command'" if self.url is not None else "'url'"
            raise ArgumentError(f"{', '.join(stray)} only go with {other}; remove them")
        for given, agent_name in self.rename.items():
            if not IDENTIFIER.match(agent_name):
                raise ArgumentError(
                    f"rename maps '{given}' to '{agent_name}', which must match {IDENTIFIER.pattern}"
                )
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "streamable HTTP"

    @property
    def where(self) -> str:
        """The server as an error names it: its command line, or its URL."""
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args])

    def working_folder(self, bundle: Path) -> Path | None:
        """`cwd`, resolved against the bundle's folder; None when not given."""
        return (bundle / self.cwd).resolve() if self.cwd is not None else None


def resolve_placeholders(raw: Mapping[str, Any], bundle: Path) -> tuple[dict[str, Any], list[str]]:
    """`raw` (a server's table) with every `${...}` in its strings resolved, and a problem for each
    one that cannot be (an unknown name, a variable that is not set)."""
    problems: list[str] = []

    def value_of(match: re.Match[str]) -> str:
        name = match[1]
        if name == "bundle":
            return str(bundle)
        if name == "python":
            return sys.executable
        if name.startswith("env:"):
            variable = name.removeprefix("env:")
            if variable in os.environ:
                return os.environ[variable]
            problems.append(f"${{{name}}}: the variable {variable} is not set where the bundle loads; set it")
            return match[0]
        problems.append(
            f"unknown placeholder ${{{name}}} (placeholders: ${{bundle}}, ${{python}}, ${{env:NAME}})"
        )
        return match[0]

    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            return _PLACEHOLDER.sub(value_of, value)
        if isinstance(value, list | tuple):
            return [resolve(item) for item in value]
        if isinstance(value, dict):
            return {key: resolve(item) for key, item in value.items()}
        return value

    return {key: resolve(value) for key, value in raw.items()}, problems
