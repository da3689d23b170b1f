"""Envs: classes of tools with per-episode state.

An instance lives for exactly one episode: it is made at deploy, seeded with the task's data for it,
and closed at teardown. Its hooks and tools may be sync or async; sync ones never run on an event
loop thread.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_env.errors import EnvDefinitionError, ToolDefinitionError
from agent_env.tools import Tool, tool_mark


class Env:
    """Base class of a bundle's envs. Subclass it, and mark tool methods with `@tool`."""

    def setup(self, seed: Mapping[str, Any]) -> Any:
        """Take the task's seed data for this env; may be async. The default keeps it as `self.seed`."""
        self.seed = dict(seed)

    def items(self) -> Any:
        """The env's items, as the `items` verifier compares them: a list of JSON-like values."""
        raise NotImplementedError(f"{type(self).__name__} does not define items()")

    def close(self) -> Any:
        """Release what the instance holds; runs once at teardown, may be async."""


@dataclass(frozen=True)
class EnvSpec:
    """An env class with the tools found on it, under the name tasks and agents use."""

    name: str
    cls: type[Env]
    tools: tuple[Tool, ...] = field(compare=False, repr=False)

    @classmethod
    def from_class(cls, name: str, env_class: type[Env]) -> EnvSpec:
        """Collect the class's tools; raises EnvDefinitionError listing every bad tool."""
        tools: list[Tool] = []
        errors: list[ToolDefinitionError] = []
        for attr, member in inspect.getmembers(env_class):
            # `@tool` above `@staticmethod`/`@classmethod` marks the descriptor, not the function.
            static = inspect.getattr_static(env_class, attr, None)
            mark = tool_mark(member) or tool_mark(static)
            if mark is None:
                continue
            # The member itself, not what it wraps, so a decorator on a tool runs when it is called;
            # its signature and docstring still come from the wrapped function.
            takes_instance = not isinstance(static, staticmethod | classmethod)
            try:
                tools.append(
                    Tool.from_function(
                        member, roles=mark.roles, method=takes_instance, timeout_s=mark.timeout_s
                    )
                )
            except ToolDefinitionError as exc:
                exc.line = _source_line(member)
                errors.append(exc)
        if errors:
            raise EnvDefinitionError(name, errors)
        tools.sort(key=lambda t: _source_line(t.function))
        return cls(name, env_class, tuple(tools))

    @property
    def has_items(self) -> bool:
        """Whether the class defines `items()`, which the items verifier needs."""
        return self.cls.items is not Env.items

    def tool(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        return next((t for t in self.tools if t.name == name), None)


def _source_line(function: Any) -> int:
    try:
        return inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        return 0
