"""Toolsets: exactly what the played agent can call in a task.

A toolset is a value: the agent's envs, its role, the task's access changes for that role, and
whether its turns offer bash. Tasks with equal toolsets see the same tools, so a trainer can share
one generated class between them; its name is stable and readable because it names that class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from agent_env.env import EnvSpec
from agent_env.sandbox.base import KILL_MARGIN_S
from agent_env.specs import DEFAULT_ROLE as DEFAULT_ROLE  # re-exported: the specs' first home
from agent_env.specs import AccessChange as AccessChange
from agent_env.specs import ToolsetSpec as ToolsetSpec
from agent_env.tools import Tool

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

    def spec(self, *, command_timeout_s: float) -> ToolsetSpec:
        """The toolset as the Task API describes it; `command_timeout_s` is the sandbox's deadline of
        a bash command (`[sandbox] command_timeout_s`), which bash's listed deadline comes from."""
        return ToolsetSpec(
            name=self.name,
            envs=self.env_names,
            role=self.role,
            access=self.access,
            bash=self.bash,
            tools=tuple(self.tools),
            tool_timeouts=self.tool_timeouts(command_timeout_s),
        )

    def tool_timeouts(self, command_timeout_s: float) -> dict[str, float]:
        """Each tool's own deadline in seconds, for the tools that declare one: an env tool's
        `@tool(timeout_s=...)`, and bash's, `command_timeout_s` plus `KILL_MARGIN_S`.

        The sandbox kills a command at `command_timeout_s` and answers with a result the turn goes on
        from; the margin lets that answer come before the server's deadline of the call would end the
        episode.
        """
        declared = {tool.name: tool.timeout_s for _, tool in self.env_tools if tool.timeout_s is not None}
        if self.bash:
            declared["bash"] = command_timeout_s + KILL_MARGIN_S
        return declared

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
        return list(self._schemas)

    @cached_property
    def _schemas(self) -> tuple[dict[str, Any], ...]:
        schemas = tuple(tool.schema for _, tool in self.env_tools)
        return (*schemas, BASH_TOOL) if self.bash else schemas
