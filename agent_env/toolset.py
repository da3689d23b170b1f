"""Toolsets: exactly what the played agent can call in a task.

A toolset is a value: the agent's envs, its role, the task's access changes for that role, and
whether its turns offer bash. Tasks with equal toolsets see the same tools, so a trainer can share
one generated class between them; its name is stable and readable because it names that class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_env.env import EnvSpec
from agent_env.tools import Tool

DEFAULT_ROLE = "default"

BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": (
            "Run a bash command in your sandbox's working folder and get its output and exit code."
        ),
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to run."}},
            "required": ["command"],
            "additionalProperties": False,
        },
    },
}


class AccessChange(BaseModel):
    """One `modify_env_tool_access` entry: enable or disable tools (or `*`) for a role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Literal["enable", "disable"]
    role: str = DEFAULT_ROLE
    tools: tuple[str, ...] | Literal["*"] = Field(
        description="Tool names, or '*' for every tool (of `env` when given)."
    )
    env: str | None = Field(default=None, description="Limit the change to this env's tools.")

    def applies_to(self, env: str, tool: str) -> bool:
        """Whether this change concerns `tool` of `env`."""
        if self.env is not None and self.env != env:
            return False
        return self.tools == "*" or tool in self.tools

    @property
    def label(self) -> str:
        """The change as it appears in a toolset's name, e.g. `-remove_crate` or `+dock.*`."""
        sign = "+" if self.action == "enable" else "-"
        names = ("*",) if self.tools == "*" else self.tools
        prefix = f"{self.env}." if self.env else ""
        return ",".join(f"{sign}{prefix}{name}" for name in names)


class ToolsetSpec(BaseModel):
    """A toolset as the Task API describes it: names only, no classes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    envs: tuple[str, ...]
    role: str
    access: tuple[AccessChange, ...] = ()
    bash: bool = False


def toolset_name(envs: Sequence[str], role: str, access: Sequence[AccessChange], bash: bool) -> str:
    """`dock`, `dock+pantry`, `dock+bash`, `dock@captain`, `dock[-remove_crate]`, ..."""
    name = "+".join([*envs, *(["bash"] if bash else [])]) or "none"
    if role != DEFAULT_ROLE:
        name += f"@{role}"
    if access:
        name += "[" + ",".join(change.label for change in access) + "]"
    return name


@dataclass(frozen=True)
class Toolset:
    """The played agent's envs, role, access changes for that role, and bash."""

    envs: tuple[EnvSpec, ...]
    role: str = DEFAULT_ROLE
    access: tuple[AccessChange, ...] = ()
    bash: bool = False

    @property
    def env_names(self) -> tuple[str, ...]:
        return tuple(env.name for env in self.envs)

    @property
    def name(self) -> str:
        return toolset_name(self.env_names, self.role, self.access, self.bash)

    @property
    def spec(self) -> ToolsetSpec:
        return ToolsetSpec(
            name=self.name, envs=self.env_names, role=self.role, access=self.access, bash=self.bash
        )

    @cached_property
    def env_tools(self) -> tuple[tuple[EnvSpec, Tool], ...]:
        """Every env tool the role may call after the access changes, in env then definition order."""
        allowed = []
        for env in self.envs:
            for tool in env.tools:
                enabled = tool.roles is None or self.role in tool.roles
                for change in self.access:
                    if change.applies_to(env.name, tool.name):
                        enabled = change.action == "enable"
                if enabled:
                    allowed.append((env, tool))
        return tuple(allowed)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The JSON Schemas of every tool the played agent sees, `bash` last when offered."""
        schemas = [tool.schema for _, tool in self.env_tools]
        return [*schemas, BASH_TOOL] if self.bash else schemas
