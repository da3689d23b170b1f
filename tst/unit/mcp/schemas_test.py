"""A server's schemas held to bounds, and checked in linear time: what `checked` refuses, and what the
validator it makes finds, with RE2 where `jsonschema` would backtrack with `re`."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agent_env.mcp._schemas import MAX_SCHEMA_DEPTH, MAX_SCHEMA_VALUES, Checked, SchemaRefusedError, checked
from tst.support.mcp_server import SLOW_NAMES, SLOW_PATTERN, fan_out_schema
from tst.support.waiting import WAIT_S

pytestmark = pytest.mark.needs("mcp_installed")

BACKTRACKING = "a" * 40 + "!"
"""Hours for a backtracking engine against `SLOW_PATTERN`; microseconds for RE2."""


def refusal(schema: dict[str, Any]) -> str:
    with pytest.raises(SchemaRefusedError) as caught:
        checked(schema)
    return str(caught.value)


def problems_within_a_bound(checks: Checked, instance: dict[str, Any]) -> list[str]:
    """The problems the validator finds, failing the test rather than waiting on a backtracking match."""
    found: list[list[str]] = []
    worker = threading.Thread(target=lambda: found.append(checks.problems(instance)), daemon=True)
    worker.start()
    worker.join(WAIT_S)
    assert found, f"checking {instance} took over {WAIT_S} s"
    return found[0]


def test_a_schema_whose_refs_fan_out_is_refused_before_it_is_inlined() -> None:
    assert refusal(fan_out_schema(40)) == (
        f"holds over {MAX_SCHEMA_VALUES} values once its $refs are inlined, as the model is shown it: "
        "refer to each $defs entry fewer times, or give the tool fewer arguments"
    )


def test_a_schema_that_fans_out_within_the_bound_is_checked() -> None:
    checks = checked(fan_out_schema(6))  # 64 leaves

    assert checks.problems({"tree": {"left": "x"}}) == ["argument 'tree.left': 'x' is not of type 'object'"]
    assert checks.left_to_server == ()


def test_a_chain_of_refs_deeper_than_the_bound_is_refused() -> None:
    levels = MAX_SCHEMA_DEPTH
    defs: dict[str, Any] = {"L0": {"type": "string"}}
    for level in range(1, levels + 1):
        defs[f"L{level}"] = {"type": "object", "properties": {"next": {"$ref": f"#/$defs/L{level - 1}"}}}
    schema = {"type": "object", "$defs": defs, "properties": {"chain": {"$ref": f"#/$defs/L{levels}"}}}

    assert refusal(schema).startswith(
        f"nests deeper than {MAX_SCHEMA_DEPTH} levels once its $refs are inlined"
    )


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (
            {"type": "object", "properties": {"a": {"$ref": "#/definitions/A"}}, "definitions": {"A": {}}},
            "refers to '#/definitions/A', which is not one of its own $defs ('#/$defs/NAME')",
        ),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
            "refers to 'https://example.com/a.json', which is not one of its own $defs",
        ),
        (
            {"type": "object", "$defs": {"N": {"properties": {"n": {"$ref": "#/$defs/N"}}}}},
            "is recursive ($defs 'N' refers to itself)",
        ),
        (
            {"type": "object", "properties": {"a": {"$id": "https://example.com/", "$ref": "#/$defs/A"}}},
            "uses $id, which moves where its refs point",
        ),
    ],
    ids=["elsewhere", "a URL", "recursive", "$id"],
)
def test_a_schema_whose_refs_point_anywhere_but_its_own_defs_is_refused(
    schema: dict[str, Any], says: str
) -> None:
    assert says in refusal(schema)


def test_patterns_and_pattern_properties_are_matched_in_linear_time() -> None:
    checks = checked(
        {
            "type": "object",
            "properties": {"word": {"type": "string", "pattern": SLOW_PATTERN}},
            "patternProperties": {SLOW_NAMES: {"type": "integer"}},
            "additionalProperties": False,
            "propertyNames": {"pattern": "^[a-z!]+$"},
        }
    )

    assert problems_within_a_bound(checks, {"word": BACKTRACKING}) == [
        f"argument 'word': {BACKTRACKING!r} does not match {SLOW_PATTERN!r}"
    ]
    assert problems_within_a_bound(checks, {"b" * 40 + "!": 1}) == [
        f"{'b' * 40 + '!'!r} does not match any of the regexes: {SLOW_NAMES!r}"
    ]
    assert problems_within_a_bound(checks, {"word": "aaa", "bbb": "x"}) == [
        "argument 'bbb': 'x' is not of type 'integer'"
    ]
    assert problems_within_a_bound(checks, {"word": "aaa", "bbb": 3}) == []


def test_a_pattern_re2_cannot_compile_is_left_to_the_server_and_said() -> None:
    checks = checked(
        {
            "type": "object",
            "properties": {"word": {"type": "string", "pattern": "^(?!x)", "minLength": 2}},
            "patternProperties": {"^(a)\\1$": {"type": "integer"}},
            "additionalProperties": False,
        }
    )

    assert checks.problems({"word": "xy", "aa": "not checked", "zz": 1}) == []
    assert checks.problems({"word": "x"}) == ["argument 'word': 'x' is too short"]
    assert checks.left_to_server == (
        "its pattern '^(?!x)' (RE2 cannot compile it: invalid perl operator: (?!)",
        "its pattern '^(a)\\\\1$' (RE2 cannot compile it: invalid escape sequence: \\1)",
    )


def test_unevaluated_properties_beside_pattern_properties_is_left_to_the_server() -> None:
    checks = checked(
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "patternProperties": {SLOW_NAMES: {"type": "integer"}},
            "unevaluatedProperties": False,
        }
    )

    assert problems_within_a_bound(checks, {"name": "n", "c" * 40 + "!": 1}) == []
    assert checks.left_to_server == (
        "its unevaluatedProperties (beside patternProperties, which jsonschema matches with re)",
    )


def test_defs_no_ref_names_count_toward_the_bound_as_jsonschema_reads_them() -> None:
    unused = {f"D{n}": {"enum": list(range(100))} for n in range(MAX_SCHEMA_VALUES // 100 + 1)}

    assert refusal({"type": "object", "$defs": unused}).startswith(f"holds over {MAX_SCHEMA_VALUES} values")
