"""Envs: classes of tools with per-episode state.

An instance lives for exactly one episode: it is made at deploy, seeded with the task's data for it,
and closed at teardown. Its hooks and tools may be sync or async; sync ones never run on an event
loop thread.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import PydanticSchemaGenerationError, TypeAdapter

from agent_env._error_types import AgentEnvError, EnvDefinitionError, ToolDefinitionError
from agent_env._tools import Tool, tool_mark


class Env:
    """Base class of a bundle's envs. Subclass it, and mark tool methods with `@tool`."""

    def setup(self, seed: Mapping[str, Any]) -> Any:
        """Take the task's seed data for this env; may be async. The default keeps it as `self.seed`.

        An override may declare the seed's shape by annotating `seed` (a pydantic model, a TypedDict,
        any type pydantic validates): each task's seed is then checked against it when the bundle
        loads (`agent-env check` names the task's line and the field), and `setup` gets the validated
        value (the model's instance)."""
        self.seed = dict(seed)

    def items(self) -> Any:
        """The env's items, as the `items` verifier compares them: a list of JSON-like values."""
        raise NotImplementedError(f"{type(self).__name__} does not define items()")

    def close(self) -> Any:
        """Release what the instance holds; runs once at teardown, may be async."""


@dataclass(frozen=True)
class EnvDefinition:
    """An env class with the tools found on it, under the name tasks and agents use: what an episode
    makes its env from at deploy (a definition of the engine's; the wire's `*Spec` are `agent_env._specs`)."""

    name: str
    cls: type[Env]
    tools: tuple[Tool, ...] = field(compare=False, repr=False)
    seed_shape: TypeAdapter[Any] | None = field(default=None, compare=False, repr=False)
    """What the class's `setup` declares its seed to be; None when it takes any mapping."""

    @classmethod
    def from_class(cls, name: str, env_class: type[Env]) -> EnvDefinition:
        """Collect the class's tools and its seed's shape; raises EnvDefinitionError listing every bad
        tool, and a seed annotation that cannot be validated."""
        tools: list[Tool] = []
        errors: list[ToolDefinitionError] = []
        shape, seed_problem = None, None
        try:
            shape = seed_shape(env_class)
        except _SeedAnnotationError as exc:
            seed_problem = (_source_line(env_class.setup), str(exc))
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
        if errors or seed_problem:
            raise EnvDefinitionError(name, errors, seed_problem)
        tools.sort(key=lambda t: _source_line(t.function))
        return cls(name, env_class, tuple(tools), shape)

    def seed_for(self, seed: Mapping[str, Any]) -> Any:
        """What `setup` is given for a task's seed: validated against its shape when it declares one
        (a ValidationError when it does not fit), otherwise the mapping as it is."""
        return seed if self.seed_shape is None else self.seed_shape.validate_python(seed)

    @property
    def has_items(self) -> bool:
        """Whether the class defines `items()`, which the items verifier needs."""
        return self.cls.items is not Env.items

    def tool(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        return next((t for t in self.tools if t.name == name), None)


class _SeedAnnotationError(AgentEnvError):
    """A `setup` whose seed annotation cannot be turned into a validator."""


def seed_shape(env_class: type[Env]) -> TypeAdapter[Any] | None:
    """The validator of the seed that `env_class.setup` declares (its first parameter's annotation),
    or None for the base class's any-mapping, an unannotated seed, or `Any`."""
    setup = env_class.setup
    parameters = list(inspect.signature(setup).parameters.values())[1:]
    if setup is Env.setup or not parameters or parameters[0].annotation is inspect.Parameter.empty:
        return None
    name = parameters[0].name
    try:
        hint = typing.get_type_hints(setup)[name]
    except (NameError, TypeError) as exc:
        raise _SeedAnnotationError(
            f"the annotation of setup's '{name}' does not resolve ({exc}); import the type it names at "
            "the module's top level"
        ) from None
    if hint is Any or (typing.get_origin(hint) in (Mapping, dict) and typing.get_args(hint)[1:] == (Any,)):
        return None
    try:
        return TypeAdapter(hint)
    except PydanticSchemaGenerationError as exc:
        raise _SeedAnnotationError(
            f"setup's '{name}' is annotated {hint!r}, which pydantic cannot validate ({exc}); annotate it "
            "with a pydantic model or a TypedDict"
        ) from None


def _source_line(function: Any) -> int:
    try:
        return inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        return 0
