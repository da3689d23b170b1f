"""Toolsets: exactly what the played agent can call in a task, and which env answers each call.

A toolset is a value: the agent's envs, its role, the task's access changes for that role, and
whether its turns offer bash. Tasks with equal toolsets see the same tools, so a trainer can share
one generated class between them; its name is stable and readable because it names that class.
An episode hands each call to its toolset (`call`): the env whose tool it is, or the sandbox's bash,
answers it, or the agent is told why none does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from agent_env._contracts.mcp import McpEnvDefinition, ServerTool
from agent_env._contracts.sandbox import KILL_MARGIN_S, Sandbox
from agent_env._contracts.sandbox_settings import SandboxConfig
from agent_env._env import EnvDefinition
from agent_env._error_types import EpisodeError, ErrorCode
from agent_env._errors import ArgumentError
from agent_env._names import TRAINER_METHODS
from agent_env._nearest import did_you_mean
from agent_env._specs import (
    DEFAULT_ROLE,
    AccessChange,
    ToolsetSpec,
)
from agent_env._tools import Tool
from agent_env._verifiers import EnvInstance


@dataclass(frozen=True)
class Shell:
    """The bash tool's side of an episode: its sandbox and the task's limits on a command."""

    sandbox: Sandbox
    settings: SandboxConfig

    async def bash(self, command: str) -> str:
        """Run a bash command in your sandbox's working folder and get its output and exit code.

        Args:
            command: The bash command to run.
        """
        limits = self.settings
        result = await self.sandbox.run(
            command, timeout_s=limits.command_timeout_s, max_output_bytes=limits.max_output_bytes
        )
        return result.render(limits.command_timeout_s)


BASH = Tool.from_function(Shell.bash, method=True, reserved=TRAINER_METHODS)
"""The bash tool: its schema and argument checks made as every env tool's are."""

BASH_TOOL: dict[str, Any] = BASH.schema


def toolset_name(envs: Sequence[str], role: str, access: Sequence[AccessChange], bash: bool) -> str:
    """`dock`, `dock+pantry`, `dock+bash`, `dock@captain`, `dock[-remove_crate]`, ..."""
    name = "+".join([*envs, *(["bash"] if bash else [])]) or "none"
    if role != DEFAULT_ROLE:
        name += f"@{role}"
    if access:
        name += "[" + ",".join(change.label for change in access) + "]"
    return name


AnyEnvDefinition = EnvDefinition | McpEnvDefinition
"""An env of a bundle: a Python class, or an MCP server."""
AnyTool = Tool | ServerTool
"""A tool of an env: a method of a Python env, or one an MCP server lists."""


@dataclass(frozen=True)
class Toolset:
    """The played agent's envs, role, access changes for that role, and bash.

    An MCP env's tools are known once its server lists them: until then `tools_known` is false and
    the toolset has no tools to tell; an episode's deploy makes the one that has (`with_tools`).
    """

    envs: tuple[AnyEnvDefinition, ...]
    role: str = DEFAULT_ROLE
    access: tuple[AccessChange, ...] = ()
    bash: bool = False

    @property
    def env_names(self) -> tuple[str, ...]:
        return tuple(env.name for env in self.envs)

    @property
    def tools_known(self) -> bool:
        """Whether every env's tools are known (an MCP env's only once its server listed them)."""
        return all(env.tools is not None for env in self.envs)

    def with_tools(self, tools: Mapping[str, tuple[ServerTool, ...]]) -> Toolset:
        """The toolset with the tools each MCP env's server listed (env name -> tools); ValueError
        naming each problem: an access change naming a tool no env of its scope has, or two envs'
        tools of one name."""
        envs = tuple(
            env.with_tools(tools[env.name])
            if isinstance(env, McpEnvDefinition) and env.name in tools
            else env
            for env in self.envs
        )
        listed = dataclasses.replace(self, envs=envs)
        problems = listed._listing_problems()
        if problems:
            raise ArgumentError("; ".join(problems))
        return listed

    def _listing_problems(self) -> list[str]:
        problems = []
        owner: dict[str, str] = {"bash": "the sandbox"} if self.bash else {}
        for env in self.envs:
            for tool in env.tools or ():
                if _refused(tool) is not None:
                    continue
                if tool.name in owner:
                    problems.append(
                        f"envs '{owner[tool.name]}' and '{env.name}' both have a tool '{tool.name}': "
                        "an agent's tools need distinct names (an MCP server's rename maps one)"
                    )
                owner.setdefault(tool.name, env.name)
        for change in self.access:
            if change.tools == "*":
                continue
            scope = [e for e in self.envs if change.env in (None, e.name)]
            known = {tool.name for env in scope for tool in env.tools or ()}
            for name in change.tools:
                if name not in known:
                    envs = ", ".join(e.name for e in scope)
                    problems.append(
                        f"modify_env_tool_access names tool '{name}', which no env of {envs} has "
                        f"(tools: {', '.join(sorted(known)) or 'none'})"
                    )
        return problems

    @property
    def name(self) -> str:
        return toolset_name(self.env_names, self.role, self.access, self.bash)

    def spec(self, *, command_timeout_s: float) -> ToolsetSpec:
        """The toolset as the Task API describes it; `command_timeout_s` is the sandbox's deadline of
        a bash command (`[sandbox] command_timeout_s`), which bash's listed deadline comes from. Its
        tools (and their deadlines) are null (empty) until every env's tools are known."""
        listed = self.tools_known
        return ToolsetSpec(
            name=self.name,
            envs=self.env_names,
            role=self.role,
            access=self.access,
            bash=self.bash,
            tools=tuple(self.tools) if listed else None,
            tool_timeouts=self.tool_timeouts(command_timeout_s) if listed else {},
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
    def env_tools(self) -> tuple[tuple[AnyEnvDefinition, AnyTool], ...]:
        """Every env tool the role may call after the access changes, in env then definition order (an
        MCP env's in the order its server listed them); none of an env whose tools are not yet known,
        nor an MCP tool the bundle refused (`ServerTool.refused`)."""
        allowed: list[tuple[AnyEnvDefinition, AnyTool]] = []
        for env in self.envs:
            for tool in env.tools or ():
                if _refused(tool) is not None:
                    continue
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

    @cached_property
    def _by_name(self) -> dict[str, tuple[str, AnyTool]]:
        """Each env tool the role may call, by name, with the name of the env it belongs to."""
        return {tool.name: (env.name, tool) for env, tool in self.env_tools}

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        envs: Mapping[str, EnvInstance],
        shell: Shell | None,
        task_id: str,
    ) -> str:
        """Run the tool `name` with `arguments` (checked against its schema): an env's, on its instance
        in `envs`, or bash, in `shell`'s sandbox; an EpisodeError the agent is shown for a tool the
        role may not call or that no env has (`task_id` names the task in it)."""
        if name == "bash" and self.bash:
            assert shell is not None
            answer: str = await BASH.invoke(shell, arguments)
            return answer
        found = self._by_name.get(name)
        if found is None:
            raise self._unknown_tool(name, task_id)
        env_name, tool = found
        return await tool.call(envs[env_name], arguments)

    def _unknown_tool(self, name: str, task_id: str) -> EpisodeError:
        """The refusal of a call no tool the role may call answers: one an env has but the role may
        not call, or one no env has (with the nearest name offered)."""
        offered = [t["function"]["name"] for t in self.tools]
        available = ", ".join(offered)
        for env in self.envs:
            if (why := _refused(env.tool(name))) is not None:
                return EpisodeError(
                    ErrorCode.UNKNOWN_TOOL,
                    f"tool '{name}' of MCP server '{env.name}' is not offered: {why} (tools: {available})",
                )
        if any(env.tool(name) for env in self.envs):
            return EpisodeError(
                ErrorCode.TOOL_NOT_ALLOWED,
                f"tool '{name}' is not available to role '{self.role}' in task "
                f"'{task_id}' (tools: {available})",
            )
        return EpisodeError(
            ErrorCode.UNKNOWN_TOOL, f"unknown tool '{name}'{did_you_mean(name, offered)} (tools: {available})"
        )

    def timeout_source(self, name: str) -> str:
        """Where a tool's own deadline comes from, and how to give it longer: what an error of a call
        cut off at it says."""
        if name == "bash" and self.bash:
            return "bash's own: [sandbox] command_timeout_s plus KILL_MARGIN_S, for the sandbox to answer"
        env_name = self._by_name[name][0] if name in self._by_name else ""
        if isinstance(self._env(env_name), McpEnvDefinition):
            return f"MCP server '{env_name}''s: raise [mcp.{env_name}] call_timeout_s to give it longer"
        return "the tool's own: raise its @tool(timeout_s=...) to give it longer"

    def _env(self, name: str) -> AnyEnvDefinition | None:
        """The env called `name`, or None."""
        return next((env for env in self.envs if env.name == name), None)


def _refused(tool: AnyTool | None) -> str | None:
    """Why an MCP server's tool is not offered (`ServerTool.refused`); None for any other tool."""
    return None if tool is None or isinstance(tool, Tool) else tool.refused
