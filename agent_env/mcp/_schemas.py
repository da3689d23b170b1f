"""An MCP server's JSON Schemas held to bounds, and the arguments and results they check, in linear time.

The model is shown a tool's input schema standing alone (its `$defs` inlined), and a schema whose
`$defs` refer to each other grows as it is inlined: a 2 KB schema whose 40 levels each refer to the
one below twice is a trillion values. `checked` measures the schema as it would be inlined, without
making it (each `$defs` entry once), and refuses one over `MAX_SCHEMA_VALUES` values or
`MAX_SCHEMA_DEPTH` levels, one whose `$ref` points anywhere but its own `$defs` (what the model is
shown could not say what it means, and `jsonschema` would fetch a URL), and one that refers to
itself. That bounds what `jsonschema` checks too: it follows the same refs, one instance at a time.

The keywords that take a regular expression (`pattern`, and `patternProperties` with the
`additionalProperties` beside it) are matched by RE2, whose time is linear in the text: Python's `re`
backtracks, and `"(a+)+$"` takes twice as long for each `a` before a `!`. RE2 does not compile
lookarounds or backreferences; such a pattern is left to the server, which checks its own input
(`Checked.left_to_server` says which, for the log), and so is `unevaluatedProperties` in a schema with
`patternProperties`, since `jsonschema` finds the properties those evaluate with `re`. Nothing falls
back to `re`.

`re2` and `jsonschema` are the `mcp` extra's: this module is imported when a server lists its tools.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import re2
from jsonschema import ValidationError, validators

from agent_env._errors import AgentEnvError

MAX_SCHEMA_VALUES = 10_000
"""The most JSON values (objects, arrays, strings, numbers...) a schema may hold once its `$refs` are
inlined: far above a tool's arguments (a few hundred), far below what stalls a server to inline."""
MAX_SCHEMA_DEPTH = 64
"""The deepest a schema may nest once its `$refs` are inlined (each object and array a level)."""

_DEFS = "#/$defs/"
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose value maps names (not keywords) to schemas."""
_DATA = frozenset({"default", "enum", "const", "examples", "required"})
"""Keywords whose value is data, not a schema (as `agent_env._tools.clean_schema` reads them)."""
_REGEX_OPTIONS = re2.Options()
_REGEX_OPTIONS.log_errors = False  # RE2 would print each pattern it cannot compile to stderr


class SchemaRefusedError(AgentEnvError, ValueError):
    """A schema that cannot be offered: what is wrong with it, worded to follow "its input schema"."""


@dataclass(frozen=True)
class Checked:
    """A schema's validator (the instances it refuses: `problems`), and what it leaves to the server."""

    validator: Any = None
    left_to_server: tuple[str, ...] = ()

    def problems(self, instance: Any, *, part: str = "argument") -> list[str]:
        """What is wrong with `instance`, each naming where (`argument 'a.b': ...`, for a `part` named
        so), in path order."""
        errors = sorted(self.validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
        found = []
        for error in errors:
            where = ".".join(str(step) for step in error.absolute_path)
            found.append(f"{part} '{where}': {error.message}" if where else error.message)
        return found


def checked(schema: Mapping[str, Any]) -> Checked:
    """`schema`'s validator; SchemaRefusedError if it breaks the bounds above, jsonschema's SchemaError if it
    is not a JSON Schema."""
    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    old = base in (validators.Draft3Validator, validators.Draft4Validator)
    walk = _Walk(schema, ids=("$id", "id") if old else ("$id",))
    base.check_schema(schema)
    left = [
        f"its pattern {pattern!r} (RE2 cannot compile it: {why})"
        for pattern in sorted(walk.patterns)
        if (why := uncompilable(pattern)) is not None
    ]
    validated: Mapping[str, Any] = schema
    if walk.keywords >= {"unevaluatedProperties", "patternProperties"}:
        validated = _without(schema, "unevaluatedProperties")
        left.append("its unevaluatedProperties (beside patternProperties, which jsonschema matches with re)")
    return Checked(_linear(base)(validated), tuple(left))


@functools.lru_cache(maxsize=4096)
def regex(pattern: str) -> Any:
    """`pattern` compiled by RE2 (once a process, while in use), or None when RE2 cannot compile it."""
    try:
        return re2.compile(pattern, _REGEX_OPTIONS)
    except re2.error:
        return None


def uncompilable(pattern: str) -> str | None:
    """Why RE2 cannot compile `pattern`; None when it can."""
    if regex(pattern) is not None:
        return None
    try:
        re2.compile(pattern, _REGEX_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    return None


class _Walk:
    """A schema measured as inlined: its values and depth, each `$defs` entry measured once; the
    patterns (`pattern`'s and `patternProperties`' names) and the keywords it holds."""

    def __init__(self, schema: Mapping[str, Any], *, ids: tuple[str, ...]) -> None:
        self._ids = ids
        definitions = schema.get("$defs", {})
        self._defs: Mapping[str, Any] = definitions if isinstance(definitions, Mapping) else {}
        self._measured: dict[str, tuple[int, int]] = {}
        self._expanding: set[str] = set()
        self.patterns: set[str] = set()
        self.keywords: set[str] = set()
        values, _ = self._node({key: value for key, value in schema.items() if key != "$defs"}, 1, root=True)
        for name in self._defs:  # one no $ref names is not shown, but counts: jsonschema reads it
            if name not in self._measured:
                values += self._ref(_DEFS + name, 1)[0]
                if values > MAX_SCHEMA_VALUES:
                    raise SchemaRefusedError(_TOO_LARGE)

    def _node(self, node: Any, depth: int, *, root: bool = False) -> tuple[int, int]:
        """(values, deepest level) of `node` as inlined, at level `depth`."""
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaRefusedError(_TOO_DEEP)
        if isinstance(node, list):
            return self._all((self._node(item, depth + 1) for item in node), depth)
        if not isinstance(node, Mapping):
            return 1, depth
        values, deepest = 1, depth
        for key, value in node.items():
            self.keywords.add(key)
            if key == "$ref":
                size, level = self._ref(value, depth)
            elif key in ("$dynamicRef", "$recursiveRef") or (key in self._ids and not root):
                raise SchemaRefusedError(
                    f"uses {key}, which moves where its refs point: the model is shown a schema standing "
                    f"alone, so refer only to its own $defs ('{_DEFS}NAME')"
                )
            elif key in _DATA:
                size, level = _data(value, depth + 1)
            elif key in _NAMED and isinstance(value, Mapping):
                if key == "patternProperties":
                    self.patterns.update(name for name in value if isinstance(name, str))
                size, level = self._all((self._node(sub, depth + 2) for sub in value.values()), depth + 1)
            else:
                if key == "pattern" and isinstance(value, str):
                    self.patterns.add(value)
                size, level = self._node(value, depth + 1)
            values, deepest = values + size, max(deepest, level)
            if values > MAX_SCHEMA_VALUES:
                raise SchemaRefusedError(_TOO_LARGE)
        return values, deepest

    def _ref(self, ref: Any, depth: int) -> tuple[int, int]:
        """What a `$ref` at level `depth` adds: its `$defs` entry, in place of the object that refers."""
        name = ref[len(_DEFS) :] if isinstance(ref, str) and ref.startswith(_DEFS) else None
        if name is None or name not in self._defs or "/" in name or "~" in name or "%" in name:
            raise SchemaRefusedError(
                f"refers to {ref!r}, which is not one of its own $defs ('{_DEFS}NAME'): the model is "
                "shown a schema standing alone, with its $defs inlined"
            )
        if name in self._expanding:
            raise SchemaRefusedError(
                f"is recursive ($defs '{name}' refers to itself): no model can be shown it standing "
                "alone; bound its nesting (a fixed number of levels) in the server"
            )
        if name not in self._measured:
            self._expanding.add(name)
            self._measured[name] = self._node(self._defs[name], 1)
            self._expanding.discard(name)
        size, levels = self._measured[name]
        if depth - 1 + levels > MAX_SCHEMA_DEPTH:
            raise SchemaRefusedError(_TOO_DEEP)
        return size - 1, depth - 1 + levels

    @staticmethod
    def _all(parts: Iterable[tuple[int, int]], depth: int) -> tuple[int, int]:
        values, deepest = 1, depth
        for size, level in parts:
            values, deepest = values + size, max(deepest, level)
            if values > MAX_SCHEMA_VALUES:
                raise SchemaRefusedError(_TOO_LARGE)
        return values, deepest


_TOO_LARGE = (
    f"holds over {MAX_SCHEMA_VALUES} values once its $refs are inlined, as the model is shown it: refer "
    "to each $defs entry fewer times, or give the tool fewer arguments"
)
_TOO_DEEP = (
    f"nests deeper than {MAX_SCHEMA_DEPTH} levels once its $refs are inlined, as the model is shown it: "
    "flatten its arguments"
)


def _data(value: Any, depth: int) -> tuple[int, int]:
    """(values, deepest level) of a keyword's data (an enum, a default...)."""
    if depth > MAX_SCHEMA_DEPTH:
        raise SchemaRefusedError(_TOO_DEEP)
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    return _Walk._all((_data(item, depth + 1) for item in items), depth)


def _without(node: Any, keyword: str) -> Any:
    """`node` (a schema) without `keyword` anywhere in it."""
    if isinstance(node, list):
        return [_without(item, keyword) for item in node]
    if not isinstance(node, Mapping):
        return node
    kept: dict[str, Any] = {}
    for key, value in node.items():
        if key == keyword:
            continue
        if key in _DATA:
            kept[key] = value
        elif key in _NAMED and isinstance(value, Mapping):
            kept[key] = {name: _without(sub, keyword) for name, sub in value.items()}
        else:
            kept[key] = _without(value, keyword)
    return kept


# The keywords that match regular expressions, as jsonschema's own (jsonschema/_keywords.py), with RE2.

Keyword = Callable[[Any, Any, Any, Mapping[str, Any]], Iterator[ValidationError]]


def _pattern(
    validator: Any, pattern: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    compiled = regex(pattern) if isinstance(pattern, str) else None
    if validator.is_type(instance, "string") and compiled is not None and not compiled.search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = regex(pattern)
        if compiled is None:
            continue
        for name, value in instance.items():
            if compiled.search(name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _extras(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        listed = ", ".join(repr(extra) for extra in sorted(extras, key=str))
        if "patternProperties" in schema:
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{listed} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


def _extras(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The properties of `instance` neither `properties` nor `patternProperties` name; none when a
    pattern is one RE2 cannot compile (which they are is then the server's to say)."""
    properties = schema.get("properties", {})
    patterns = [regex(pattern) for pattern in schema.get("patternProperties", {})]
    if any(compiled is None for compiled in patterns):
        return []
    return [
        name
        for name in instance
        if name not in properties and not any(compiled.search(name) for compiled in patterns)
    ]


_KEYWORDS: dict[str, Keyword] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _linear(base: Any) -> Any:
    """`base` (a jsonschema validator class, one per draft) with RE2's keywords: made once a draft."""
    return validators.extend(base, _KEYWORDS)
