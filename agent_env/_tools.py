"""Tools: typed, documented methods whose JSON Schema comes from their signature and docstring.

The schema is what the played agent sees and what its arguments are checked against before the
method runs, so the two can never disagree: both come from one pydantic model built from the
signature, with descriptions taken from the Google-style docstring.
"""

from __future__ import annotations

import inspect
import json
import math
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, overload

import docstring_parser
import pydantic
from pydantic import BaseModel, ConfigDict, ValidationError

from agent_env._error_types import EpisodeError, ErrorCode, ToolDefinitionError, validation_problems
from agent_env._names import RESERVED_NAMES, name_problem
from agent_env._threads import call_as

_F = TypeVar("_F", bound=Callable[..., Any])
_MARK = "__agent_env_tool__"
_FIELD_PREFIX = "arg_"


@dataclass(frozen=True)
class ToolMark:
    """What `@tool` records on a method: the roles it is limited to and its own deadline, if any."""

    roles: frozenset[str] | None = None
    timeout_s: float | None = None


@overload
def tool(fn: _F, /) -> _F: ...
@overload
def tool(*, roles: Collection[str] | None = None, timeout_s: float | None = None) -> Callable[[_F], _F]: ...
def tool(
    fn: _F | None = None, /, *, roles: Collection[str] | None = None, timeout_s: float | None = None
) -> _F | Callable[[_F], _F]:
    """Mark an env method as a tool the played agent can call.

    `roles` limits the tool to agents playing one of those roles; a task can still enable or disable
    it per role with `modify_env_tool_access`. `timeout_s` is the tool's own deadline, in seconds:
    listed with its schema, and the server cuts a call off at the smaller of it and the client's.
    """

    def mark(method: _F) -> _F:
        if problem := _timeout_problem(timeout_s):
            raise ToolDefinitionError(getattr(method, "__name__", repr(method)), [problem])
        deadline = float(timeout_s) if timeout_s is not None else None
        setattr(method, _MARK, ToolMark(frozenset(roles) if roles is not None else None, deadline))
        return method

    return mark(fn) if fn is not None else mark


def _timeout_problem(timeout_s: object) -> str | None:
    """What is wrong with a tool's declared deadline, worded with the fix; None when it is fine."""
    if timeout_s is None:
        return None
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or not math.isfinite(timeout_s)
        or timeout_s <= 0
    ):
        return (
            f"timeout_s must be a number of seconds > 0, got {timeout_s!r}; declare the tool's deadline "
            "as @tool(timeout_s=30), or leave timeout_s out for none of its own"
        )
    return None


def tool_mark(obj: object) -> ToolMark | None:
    """The mark `@tool` left on `obj`, or None for a plain method."""
    mark = getattr(obj, _MARK, None)
    return mark if isinstance(mark, ToolMark) else None


@dataclass(frozen=True, eq=False)
class Tool:
    """One callable tool: its schema, its argument model and the function behind it."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any] = field(repr=False)
    arguments: type[BaseModel] = field(repr=False)
    roles: frozenset[str] | None = None
    method: bool = False
    """Whether `function` takes the env instance first (a plain method, not a static one)."""
    timeout_s: float | None = None
    """The tool's own deadline in seconds (`@tool(timeout_s=...)`), if it declares one."""

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        roles: frozenset[str] | None = None,
        method: bool = False,
        timeout_s: float | None = None,
        reserved: frozenset[str] = RESERVED_NAMES,
    ) -> Tool:
        """Build a tool from a typed, documented function; `method` skips its first parameter;
        `reserved` are the names it may not take (the framework's own tools make theirs so).

        Raises ToolDefinitionError naming every reason the tool cannot be built.
        """
        name = function.__name__
        reasons: list[str] = []
        if problem := name_problem(name, what="the name", reserved=reserved):
            reasons.append(problem)
        if problem := _timeout_problem(timeout_s):
            reasons.append(problem)
        parameters = list(inspect.signature(function).parameters.values())[1 if method else 0 :]
        description, documented = _read_docstring(function, parameters, reasons)
        try:
            hints = typing.get_type_hints(function, include_extras=True)
        except Exception as exc:
            raise ToolDefinitionError(name, [*reasons, f"its type hints cannot be resolved ({exc})"]) from exc
        fields = _argument_fields(parameters, hints, documented, reasons)
        for extra in sorted(set(documented or ()) - {p.name for p in parameters}):
            reasons.append(f"documents argument '{extra}', which the signature does not have")

        try:
            model = pydantic.create_model(
                f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
            )
            parameters_schema = clean_schema(model.model_json_schema())
        except (pydantic.PydanticSchemaGenerationError, pydantic.errors.PydanticInvalidForJsonSchema) as exc:
            reasons.append(
                "an argument's type has no JSON Schema "
                f"({str(exc).splitlines()[0]}); use str, int, float, bool, list, dict, Literal, "
                "an Enum or a pydantic model"
            )
        if reasons:
            raise ToolDefinitionError(name, reasons)
        deadline = float(timeout_s) if timeout_s is not None else None
        return cls(name, description, parameters_schema, function, model, roles, method, deadline)

    @property
    def schema(self) -> dict[str, Any]:
        """The tool as chat templates and OpenAI-style APIs describe a function: what the model sees,
        so its deadline is listed beside it (`ToolsetSpec.tool_timeouts`), never in it."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @cached_property
    def _is_async(self) -> bool:
        """Whether `function` is a coroutine function: looked up once, not on every call."""
        return inspect.iscoroutinefunction(self.function)

    @cached_property
    def _argument_names(self) -> tuple[tuple[str, str], ...]:
        """Each argument's field in the arguments model, and its name."""
        return tuple((field, info.alias or field) for field, info in self.arguments.model_fields.items())

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments as the function takes them, or an INVALID_ARGUMENTS error naming each bad one."""
        if not isinstance(arguments, Mapping):
            raise EpisodeError(
                ErrorCode.INVALID_ARGUMENTS,
                f"{self.name}: arguments must be a JSON object, not {type(arguments).__name__}",
            )
        try:
            model = self.arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            known = [name for _, name in self._argument_names]
            problems = validation_problems(exc, noun="argument", known=known)
            raise EpisodeError(ErrorCode.INVALID_ARGUMENTS, f"{self.name}: " + "; ".join(problems)) from None
        return {name: getattr(model, field) for field, name in self._argument_names}

    async def invoke(self, instance: object | None, arguments: Mapping[str, Any]) -> Any:
        """Validate and run (off the event loop when sync): the tool's own return value, as a verifier
        reads it; what the tool raises propagates."""
        kwargs = self.validate(arguments)
        bound = self.function.__get__(instance) if self.method and instance is not None else self.function
        return await call_as(self._is_async, bound, **kwargs)

    async def call(self, instance: object | None, arguments: Mapping[str, Any]) -> str:
        """Validate, run (off the event loop when sync) and render the result as the model sees it."""
        try:
            result = await self.invoke(instance, arguments)
        except EpisodeError:
            raise
        except Exception as exc:
            raise EpisodeError(
                ErrorCode.TOOL_ERROR, f"{self.name} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return render_result(result)


def _read_docstring(
    function: Callable[..., Any], parameters: list[inspect.Parameter], reasons: list[str]
) -> tuple[str, dict[str, str] | None]:
    """The tool's description and each argument's, from a Google-style docstring; None for the
    arguments' when there is no docstring at all, whose one reason then names every argument to
    describe too (one mistake, one reason, not one more for each argument)."""
    text = inspect.getdoc(function) or ""
    if not text.strip():
        named = [f"'{p.name}: ...'" for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        then = f", then describe each argument under Args: ({', '.join(named)})" if named else ""
        reasons.append(f"has no docstring summary; say what the tool does in its first line{then}")
        return "", None
    try:
        doc = docstring_parser.parse(text, style=docstring_parser.DocstringStyle.GOOGLE)
    except docstring_parser.ParseError as exc:
        reasons.append(
            f"its docstring is not Google style ({exc}); write a summary line, then 'Args:' with "
            "one 'name: description' line per argument"
        )
        doc = docstring_parser.Docstring()
    description = " ".join(p for p in (doc.short_description, doc.long_description) if p).strip()
    if not description:
        reasons.append("has no docstring summary; say what the tool does in its first line")
    return description, {p.arg_name: (p.description or "").strip() for p in doc.params}


def _argument_fields(
    parameters: list[inspect.Parameter],
    hints: dict[str, Any],
    documented: dict[str, str] | None,
    reasons: list[str],
) -> dict[str, Any]:
    """The pydantic fields of the arguments model, one per parameter that can be described; an
    undocumented argument is a reason of its own only when there is a docstring (`documented`)."""
    fields: dict[str, Any] = {}
    for param in parameters:
        arg = param.name
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            stars = "*" if param.kind is param.VAR_POSITIONAL else "**"
            reasons.append(f"{stars}{arg} cannot be described to a model; name every argument")
            continue
        if problem := name_problem(arg, kind="argument"):
            reasons.append(problem)
        if arg not in hints:
            reasons.append(f"argument '{arg}' has no type hint; annotate it")
            continue
        if documented is not None and not documented.get(arg):
            reasons.append(f"argument '{arg}' is not documented; add '{arg}: ...' under Args:")
        default = ... if param.default is param.empty else param.default
        # The field's own name is prefixed and the argument's name is its alias, so arguments
        # pydantic reserves for itself (`_x`, `model_config`, `schema`, ...) still work.
        fields[f"{_FIELD_PREFIX}{arg}"] = (
            hints[arg],
            pydantic.Field(default, alias=arg, description=(documented or {}).get(arg) or None),
        )
    return fields


_JSON_SCALARS = (bool, int)
"""Results json.dumps renders as pydantic would (finite floats too), without pydantic's walk."""

_ANY: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Any)
"""Built once: a TypeAdapter costs far more to make than to use, and every non-string result needs one."""


def render_result(value: Any) -> str:
    """A tool's return value as text: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None or type(value) in _JSON_SCALARS or (type(value) is float and math.isfinite(value)):
        return json.dumps(value)
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(_ANY.dump_python(value, mode="json"), ensure_ascii=False)


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline `$defs` and drop pydantic's titles, so every tool's schema stands alone."""
    definitions = schema.pop("$defs", {})

    def clean(node: Any, expanding: frozenset[str] = frozenset()) -> Any:
        if isinstance(node, list):
            return [clean(item, expanding) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"].rsplit("/", 1)[-1]
            if ref in expanding:
                raise pydantic.errors.PydanticInvalidForJsonSchema(f"{ref} is a recursive type")
            merged = {**definitions[ref], **{k: v for k, v in node.items() if k != "$ref"}}
            return clean(merged, expanding | {ref})
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title":
                continue
            if key in ("properties", "patternProperties"):
                out[key] = {name: clean(sub, expanding) for name, sub in value.items()}
            elif key in ("default", "enum", "const", "examples", "required"):
                out[key] = value
            else:
                out[key] = clean(value, expanding)
        return out

    cleaned: dict[str, Any] = clean(schema)
    cleaned.setdefault("properties", {})
    cleaned.setdefault("required", [])
    return cleaned
