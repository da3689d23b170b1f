"""A tool's JSON Schema as a typed Python signature and a Google docstring, for TRL to read back.

TRL shows a tool to the model through `transformers.utils.get_json_schema`, which knows a function
only by its type hints and docstring. So each server tool becomes a function whose hints and
docstring render to the same tool: name, description, parameter names, types, enums, descriptions
and the required list. Constraints (`minimum`, `pattern`, ...) have no Python type: they stay the
server's to enforce, and their violations reach the model as the server's error. Anything else no
signature can say (a nested object with named fields, `$ref`, `allOf`, ...) is refused here, at build
time, naming the tool and the construct, since TRL would only fail at its first generation.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from agent_env._errors import AgentEnvError, ArgumentTypeError
from agent_env._names import TRAINER_METHODS, name_problem

_DOCSTRING_SECTIONS = ("Args:", "Returns:", "Raises:")

_IGNORED = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        # constraints: the server validates them
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
    }
)
_SCALARS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
}
_JSON_SCALAR_TYPES = (str, int, float, bool, type(None))


class UnsupportedToolError(AgentEnvError, ValueError):
    """A server tool TRL could not call or show: the message names the tool, the problem and the fix."""


@dataclass(frozen=True)
class ToolSignature:
    """What a tool method needs: its name, docstring, keyword-only parameters and their hints."""

    name: str
    doc: str
    parameters: tuple[inspect.Parameter, ...]

    @property
    def signature(self) -> inspect.Signature:
        receiver = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return inspect.Signature([receiver, *self.parameters])

    @property
    def annotations(self) -> dict[str, Any]:
        """The parameters' hints; no return hint, which get_json_schema would add to the tool."""
        return {p.name: p.annotation for p in self.parameters}


def tool_signature(tool: Mapping[str, Any]) -> ToolSignature:
    """The signature of a tool listed as `{"type": "function", "function": {...}}` (or the inner part)."""
    function = tool.get("function", tool)
    name = function.get("name")
    if not isinstance(name, str):
        raise UnsupportedToolError(f"a tool has no name: {dict(tool)!r}")
    if problem := callable_name_problem(name, kind="tool"):
        raise UnsupportedToolError(problem)
    description = function.get("description") or ""
    if not isinstance(description, str):
        raise UnsupportedToolError(f"tool '{name}': its description must be a string")
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    where = f"tool '{name}'"
    _require_object(schema, where)
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    if missing := sorted(required - set(properties)):
        raise UnsupportedToolError(f"{where} requires arguments it does not describe: {', '.join(missing)}")
    parameters = []
    documented = []
    for argument, argument_schema in properties.items():
        if problem := callable_name_problem(argument, kind="argument", tool=name):
            raise UnsupportedToolError(problem)
        at = f"{where}, argument '{argument}'"
        if not isinstance(argument_schema, Mapping):
            raise UnsupportedToolError(f"{at}: its schema must be an object")
        hint = python_type(argument_schema, at)
        text = _one_line(argument_schema.get("description") or "")
        if not text:
            raise UnsupportedToolError(
                f"{at} has no description, which TRL needs to show the tool (get_json_schema refuses an "
                "undocumented argument): document it in the tool's docstring"
            )
        default = inspect.Parameter.empty if argument in required else argument_schema.get("default")
        parameters.append(
            inspect.Parameter(argument, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        )
        documented.append((argument, text))
    return ToolSignature(name, _docstring(name, description, documented), tuple(parameters))


def callable_name_problem(
    name: str, *, kind: Literal["tool", "argument"], tool: str | None = None
) -> str | None:
    """Why TRL could not call a tool or pass an argument of this name, with the fix; None when it can.

    The rules are the core's (`agent_env._names`): a server may list tools no bundle could define.
    """
    what = f"{kind} '{name}'" + (f" of tool '{tool}'" if tool else "")
    return name_problem(name, kind=kind, what=what, reserved=TRAINER_METHODS)


def python_type(schema: Mapping[str, Any], where: str) -> Any:
    """The type hint get_json_schema renders back to `schema` (dialect aside); refuses the rest."""
    unknown = sorted(
        set(schema)
        - _IGNORED
        - {"type", "enum", "const", "anyOf", "oneOf", "items", "prefixItems"}
        - {"properties", "additionalProperties", "required", "nullable"}
    )
    if unknown:
        raise UnsupportedToolError(
            f"{where}: its schema uses {', '.join(repr(k) for k in unknown)}, which no typed Python "
            "signature can express for TRL: simplify the argument's type"
        )
    if "enum" in schema or "const" in schema:
        values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
        return _literal(values, schema, where)
    for union_key in ("anyOf", "oneOf"):
        if union_key in schema:
            members = schema[union_key]
            if not isinstance(members, list) or not members:
                raise UnsupportedToolError(f"{where}: '{union_key}' must be a non-empty list")
            return _nullable(_union([python_type(m, where) for m in members]), schema)
    kind = schema.get("type")
    if kind is None:
        if set(schema) & {"items", "prefixItems", "properties", "additionalProperties"}:
            raise UnsupportedToolError(f"{where}: its schema has no 'type' to go with its other keywords")
        return Any
    if isinstance(kind, list):
        return _nullable(_union([python_type({**schema, "type": k}, where) for k in kind]), schema)
    if kind in _SCALARS:
        return _nullable(_SCALARS[kind], schema)
    if kind == "array":
        return _nullable(_array(schema, where), schema)
    if kind == "object":
        return _nullable(_mapping(schema, where), schema)
    raise UnsupportedToolError(f"{where}: unknown JSON Schema type {kind!r}")


def bind_arguments(signature: ToolSignature) -> Callable[..., dict[str, Any]]:
    """A checker of a call's keyword arguments, raising TypeError as a real function would.

    A call that names only known parameters and every required one is taken as it is; any other is
    bound to the full signature, whose TypeError goes to the model as the tool's error, named by the
    tool it called (`pack() got an unexpected keyword argument 'colour'`), as `end_turn`'s is.
    """
    full = signature.signature
    known = frozenset(parameter.name for parameter in signature.parameters)
    required = frozenset(p.name for p in signature.parameters if p.default is inspect.Parameter.empty)

    def bind(receiver: object, /, **arguments: Any) -> dict[str, Any]:
        if not (required <= arguments.keys() <= known):
            try:
                full.bind(receiver, **arguments)
            except TypeError as wrong:
                raise ArgumentTypeError(f"{signature.name}() {wrong}") from None
        return arguments

    return bind


def _require_object(schema: Any, where: str) -> None:
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise UnsupportedToolError(f"{where}: its parameters must be a JSON Schema object")
    for key in ("allOf", "anyOf", "oneOf", "$ref", "patternProperties", "if", "not"):
        if key in schema:
            raise UnsupportedToolError(
                f"{where}: its parameters use {key!r}, which no typed Python signature can express for "
                "TRL: give the tool plain named arguments"
            )


def _literal(values: list[Any], schema: Mapping[str, Any], where: str) -> Any:
    if not values or any(not isinstance(v, _JSON_SCALAR_TYPES) for v in values):
        raise UnsupportedToolError(
            f"{where}: an enum of {values!r} cannot be a typing.Literal (only non-empty lists of strings, "
            "numbers, booleans and null can)"
        )
    return _nullable(Literal[tuple(values)], schema)


def _array(schema: Mapping[str, Any], where: str) -> Any:
    prefix = schema.get("prefixItems")
    if prefix is not None:
        if not isinstance(prefix, list) or len(prefix) < 2 or schema.get("items", False) is not False:
            raise UnsupportedToolError(
                f"{where}: only a fixed tuple of two or more items can be typed (tuple[...]); use a list"
            )
        return tuple.__class_getitem__(tuple(python_type(item, where) for item in prefix))
    items = schema.get("items")
    if items is None:
        return list
    if not isinstance(items, Mapping):
        raise UnsupportedToolError(f"{where}: 'items' must be a schema")
    return list[python_type(items, where)]  # type: ignore[misc]


def _mapping(schema: Mapping[str, Any], where: str) -> Any:
    if schema.get("properties"):
        raise UnsupportedToolError(
            f"{where}: an object with named fields (a nested model) has no typed signature TRL can show: "
            "flatten its fields into the tool's own arguments"
        )
    values = schema.get("additionalProperties")
    if values is None or values is True:
        return dict
    if values is False:
        raise UnsupportedToolError(f"{where}: an object that takes no field has no type; drop the argument")
    return dict[str, python_type(values, where)]  # type: ignore[misc]


def _union(members: list[Any]) -> Any:
    unique = list(dict.fromkeys(members))
    return unique[0] if len(unique) == 1 else Union[tuple(unique)]  # noqa: UP007


def _nullable(hint: Any, schema: Mapping[str, Any]) -> Any:
    return Optional[hint] if schema.get("nullable") is True else hint  # noqa: UP045


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _docstring(name: str, description: str, arguments: list[tuple[str, str]]) -> str:
    """A Google docstring that get_json_schema parses back to `description` and each argument's text."""
    summary = description.strip()
    for section in _DOCSTRING_SECTIONS:
        if section in summary:
            raise UnsupportedToolError(
                f"tool '{name}': its description contains {section!r}, which get_json_schema reads as the "
                "start of a docstring section and cuts the description there: reword it"
            )
    if "\t" in summary:
        summary = summary.expandtabs()
    for argument, text in arguments:
        if re.search(r"\(choices:.*\)\s*$", text, flags=re.IGNORECASE):
            raise UnsupportedToolError(
                f"tool '{name}', argument '{argument}': its description ends in '(choices: ...)', which "
                "get_json_schema reads as an enum: reword it"
            )
    if not summary and not arguments:
        raise UnsupportedToolError(
            f"tool '{name}' has no description, which TRL needs to show it: document the tool"
        )
    lines = [summary] if summary else []
    if arguments:
        lines += ["", "Args:"] if summary else ["Args:"]
        lines += [f"    {argument}: {text}" for argument, text in arguments]
    return "\n".join(lines)
