"""An MCP server's tools as the played agent sees them, and their results as it reads them.

A server lists each tool with a JSON Schema of its input. The agent sees that schema standing alone
(`$defs` inlined, titles dropped, as a bundle's own tools are shown), with a description on every
argument the server left without one (its title, else its name), since TRL shows only documented
arguments. Arguments are checked against the server's schema before the call, so a wrong one is
`INVALID_ARGUMENTS` as for any tool. A result's structured content is what the agent reads, as a
bundle's own tool's return value would read; a result without any reads as its text blocks.

A tool the bundle could offer but not safely (a schema past `schemas`' bounds, a name that was not
valid Unicode) is listed `refused`, saying why: not offered, while the server's other tools are. What
the bundle must fix between its settings and the server (a name to `rename`, a malformed schema) fails
the listing (`McpListingError`).

The schemas are checked by `agent_env.mcp._schemas` (jsonschema, with RE2), imported when a server's
tools are listed, never with this module.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pydantic

from agent_env._contracts.mcp_settings import McpServerConfig
from agent_env._error_types import EpisodeError, ErrorCode
from agent_env._errors import AgentEnvError
from agent_env._names import name_problem
from agent_env._tools import clean_schema, render_result
from agent_env._unicode import REPLACEMENT

if TYPE_CHECKING:
    from mcp import types

    from agent_env.mcp._schemas import Checked

CALL_MARGIN_S = 1.0
"""How much longer than a server's `call_timeout_s` its tools list as their own deadline: the env's
own deadline answers first, with the message that says which setting to raise."""


@dataclass(frozen=True, eq=False)
class McpTool:
    """One tool an MCP server lists: the name the agent calls (`name`) and the server's (`remote`)."""

    name: str
    remote: str
    description: str
    parameters: Mapping[str, Any]
    checks: Checked | None = field(default=None, repr=False)
    """The server's input schema, as it checks arguments (`agent_env.mcp._schemas`)."""
    roles: frozenset[str] | None = None
    timeout_s: float | None = None
    output: Checked | None = field(default=None, repr=False)
    """The server's output schema, as it checks a result's structured content; None without one."""
    refused: str | None = None
    """Why the tool is not offered (its schema, or its name): it is listed, but no call reaches it."""

    @property
    def schema(self) -> dict[str, Any]:
        """The tool as the model sees it, in the shape of a bundle's own tools' schemas."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    async def call(self, instance: Any, arguments: Mapping[str, Any]) -> str:
        """Call the tool on its episode's session (`instance`, an `McpEnv`), as the agent does."""
        result: str = await instance.run(self, arguments)
        return result

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments, once they meet the server's schema; else INVALID_ARGUMENTS naming each problem.
        Blocking (linear in the arguments and the schema, which are bounded): run off the loop."""
        if not isinstance(arguments, Mapping):
            raise EpisodeError(
                ErrorCode.INVALID_ARGUMENTS,
                f"{self.name}: arguments must be a JSON object, not {type(arguments).__name__}",
            )
        given = dict(arguments)
        problems = self.checks.problems(given) if self.checks is not None else []
        if not problems:
            return given
        known = ", ".join(self.parameters.get("properties", {})) or "none"
        raise EpisodeError(
            ErrorCode.INVALID_ARGUMENTS, f"{self.name}: {'; '.join(problems)} (arguments: {known})"
        )

    def result_problems(self, structured: dict[str, Any] | None) -> list[str]:
        """What is wrong with a result's structured content by the tool's output schema (none without
        one). Blocking, as `validate` is."""
        if self.output is None:
            return []
        if structured is None:
            return ["it has an output schema but answered no structured content"]
        return self.output.problems(structured, part="field")


class McpListingError(AgentEnvError):
    """What is wrong with the tools a server listed, each problem naming its tool and the fix."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


def listed_tools(env: str, server: McpServerConfig, listed: Sequence[types.Tool]) -> tuple[McpTool, ...]:
    """The server's tools under the bundle's rules (those it cannot offer `refused`, saying why), or
    McpListingError naming every one that breaks them. Blocking: bounded, but run off the loop."""
    from jsonschema import SchemaError

    from agent_env.mcp._schemas import SchemaRefusedError, checked

    problems: list[str] = []
    tools: list[McpTool] = []
    remote_names = [tool.name for tool in listed]
    for stray_kind, names in (("rename", server.rename), ("roles", server.roles)):
        for stray in sorted(set(names) - set(remote_names)):
            problems.append(
                f"[mcp.{env}] {stray_kind} names tool '{stray}', which the server does not list "
                f"(tools: {', '.join(remote_names) or 'none'})"
            )
    seen: dict[str, str] = {}
    for tool in listed:
        name = server.rename.get(tool.name, tool.name)
        where = f"tool '{tool.name}'" + (f" (renamed '{name}')" if name != tool.name else "")
        description = (tool.description or tool.title or name).strip()
        if REPLACEMENT in tool.name:
            why = (
                "its name held a lone surrogate, which is not valid Unicode (or U+FFFD, which replaces "
                "one): no call can name it as the server does; give it a name of valid Unicode in the server"
            )
            tools.append(_refused(tool.name, tool.name, description, why))
            continue
        if problem := name_problem(name, what=where):
            problems.append(
                f'{problem} in the server, or map it: [mcp.{env}] rename = {{"{tool.name}" = ...}}'
            )
            continue
        if name in seen:
            problems.append(f"{where} and tool '{seen[name]}' both go by '{name}'; rename one")
            continue
        seen[name] = tool.name
        schema = tool.inputSchema
        try:
            checks = checked(schema)
        except SchemaError as exc:
            problems.append(f"{where} lists a malformed input schema: {exc.message} (at {_path(exc)})")
            continue
        except SchemaRefusedError as exc:
            tools.append(_refused(name, tool.name, description, f"its input schema {exc}"))
            continue
        try:
            output = checked(tool.outputSchema) if tool.outputSchema is not None else None
        except SchemaError as exc:
            why = f"its output schema is not a JSON Schema: {exc.message} (at {_path(exc)})"
            tools.append(_refused(name, tool.name, description, why))
            continue
        except SchemaRefusedError as exc:
            tools.append(_refused(name, tool.name, description, f"its output schema {exc}"))
            continue
        if schema.get("type") != "object":
            problems.append(
                f"{where} lists an input schema of type {schema.get('type')!r}; MCP needs 'object'"
            )
            continue
        try:
            parameters = clean_schema(_described(copy.deepcopy(dict(schema))))
        except pydantic.errors.PydanticInvalidForJsonSchema as exc:
            problems.append(f"{where} lists an input schema no model can be shown: {exc}")
            continue
        roles = server.roles.get(tool.name)
        tools.append(
            McpTool(
                name=name,
                remote=tool.name,
                description=description,
                parameters=parameters,
                checks=checks,
                roles=frozenset(roles) if roles is not None else None,
                timeout_s=server.call_timeout_s + CALL_MARGIN_S,
                output=output,
            )
        )
    if problems:
        raise McpListingError(problems)
    return tuple(tools)


def _refused(name: str, remote: str, description: str, why: str) -> McpTool:
    """A tool the bundle lists but does not offer, saying `why`."""
    return McpTool(name=name, remote=remote, description=description, parameters={}, refused=why)


def _described(parameters: dict[str, Any]) -> dict[str, Any]:
    """The parameters, each argument described: by the server, else by its title, else by its name."""
    properties = parameters.get("properties", {})
    for argument, schema in properties.items():
        if isinstance(schema, dict) and not schema.get("description"):
            schema["description"] = str(schema.get("title") or argument.replace("_", " "))
    return parameters


def _path(error: Exception) -> str:
    path = getattr(error, "absolute_path", ())
    return "/".join(str(part) for part in path) or "the schema's root"


def result_text(result: types.CallToolResult) -> str:
    """A tool's result as the agent reads it: its structured content as a bundle's own tool's would
    read (a string as it is, anything else as JSON); without any, its content blocks' text."""
    if result.structuredContent is not None:
        return render_result(_unwrapped(result.structuredContent))
    return "\n".join(text for block in result.content if (text := _block_text(block)) is not None)


def result_value(result: types.CallToolResult) -> Any:
    """A tool's result as a verifier or a simulated user reads it: its structured content, else its
    text, parsed as JSON when it is JSON."""
    if result.structuredContent is not None:
        return _unwrapped(result.structuredContent)
    text = result_text(result)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _unwrapped(structured: dict[str, Any]) -> Any:
    """Structured content as the tool returned it: a value the SDK's servers wrap as {"result": ...}
    (structured content is an object; a tool that returns a list or a string is wrapped) unwrapped."""
    return structured["result"] if set(structured) == {"result"} else structured


def _block_text(block: Any) -> str | None:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mimeType}]"
    if kind == "resource_link":
        return f"[resource: {block.uri}]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        return str(text) if text is not None else f"[resource: {resource.uri}]"
    return None
