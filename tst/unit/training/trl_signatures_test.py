"""Tool schemas as typed, documented methods: what TRL shows the model is the tool the server lists.

TRL renders each tool method with transformers' `get_json_schema`; those tests need transformers,
which comes with trl (the `trl_installed` capability). The refusals need nothing but the helper.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from agent_env._loading import load_bundle
from agent_env._tools import Tool
from agent_env.client._deadlines import Deadlines
from agent_env.client._signatures import tool_signature
from agent_env.training.trl import FleetSettings, ToolsetSettings, UnsupportedToolError
from agent_env.training.trl._classes import environment_class
from tst.support.wharf import WHARF
from tst.unit.training._trl import trl_tools

pytestmark = pytest.mark.needs("trl_installed")

_CONSTRAINTS = {"minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern"}


class Color(Enum):
    RED = "red"
    BLUE = "blue"


def paint(
    crates: list[str],
    counts: dict[str, int],
    color: Color,
    pair: tuple[int, str],
    label: int | str,
    shade: Literal["light", "dark"] = "light",
    bay: Annotated[int, Field(ge=1, le=6)] | None = None,
    weights: list[float] | None = None,
    urgent: bool = False,
) -> str:
    """Paint crates.

    The paint dries overnight; painted crates cannot move until then.

    Args:
        crates: The crates' labels.
        counts: How many coats, by side.
        color: The paint's color.
        pair: A number and a name.
        label: A number or a name.
        shade: How dark.
        bay: Only crates in this bay; every bay when omitted. A long description
            that runs over two lines.
        weights: Each crate's weight, in kg.
        urgent: Whether to paint before anything else.
    """
    return "painted"


def as_rendered(schema: Any) -> Any:
    """A server schema in get_json_schema's dialect: nullable for anyOf-with-null, no titles, defaults
    or constraints, one-line descriptions."""
    if not isinstance(schema, dict):
        return schema
    members = schema.get("anyOf")
    if members and {"type": "null"} in members:
        rest = [m for m in members if m != {"type": "null"}]
        inner = rest[0] if len(rest) == 1 else {"anyOf": rest}
        merged = {**{k: v for k, v in schema.items() if k != "anyOf"}, **inner, "nullable": True}
        return as_rendered(merged)
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _CONSTRAINTS | {"title", "default"}:
            continue
        if key == "additionalProperties" and value is False:
            continue
        if key == "required" and not value:
            continue
        if key == "description":
            cleaned[key] = " ".join(value.split())
        elif key == "properties":
            cleaned[key] = {name: as_rendered(sub) for name, sub in value.items()}
        elif key in ("anyOf", "prefixItems"):
            cleaned[key] = [as_rendered(sub) for sub in value]
        else:
            cleaned[key] = as_rendered(value)
    members = cleaned.get("anyOf")
    if members and all(set(m) == {"type"} and isinstance(m["type"], str) for m in members):
        del cleaned["anyOf"]
        names = sorted({m["type"] for m in members})
        cleaned["type"] = names[0] if len(names) == 1 else names
    return cleaned


def toolset_class(tools: list[dict[str, Any]], name: str = "crates") -> type:
    settings = ToolsetSettings(
        key="signatures-test",
        fleet=FleetSettings(("http://127.0.0.1:9",)),
        toolset=name,
        tools=tuple(json.dumps(tool) for tool in tools),
        deadlines=Deadlines(reset_timeout_s=60, tool_timeout_s=10),
    )
    return environment_class(settings)


def rendered(cls: type, name: str) -> dict[str, Any]:
    from transformers.utils import get_json_schema

    schema: dict[str, Any] = get_json_schema(getattr(cls, name))
    return schema


def listed(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool["function"]
    return {
        "type": "function",
        "function": {
            "name": function["name"],
            "description": function["description"],
            "parameters": as_rendered(function["parameters"]),
        },
    }


@pytest.mark.needs("trl_installed")
def test_get_json_schema_renders_each_type_a_tool_can_take_as_the_tool_the_server_lists() -> None:
    tool = Tool.from_function(paint).schema

    assert rendered(toolset_class([tool]), "paint") == listed(tool)


@pytest.mark.needs("trl_installed")
def test_get_json_schema_renders_every_tool_of_the_example_bundle_as_the_server_lists_it() -> None:
    bundle = load_bundle(WHARF)
    toolsets = {task.toolset.name: task.toolset.tools for tasks in bundle.splits.values() for task in tasks}

    for name, tools in toolsets.items():
        cls = toolset_class(tools, name)
        for tool in tools:
            assert rendered(cls, tool["function"]["name"]) == listed(tool), (name, tool)


@pytest.mark.needs("trl_installed")
def test_end_turn_renders_as_a_tool_with_an_optional_reply() -> None:
    assert rendered(toolset_class([]), "end_turn")["function"] == {
        "name": "end_turn",
        "description": (
            "End your turn with your reply to the user. Call it once you have done what they asked."
        ),
        "parameters": {
            "type": "object",
            "properties": {"reply": {"type": "string", "description": "Your reply to the user."}},
        },
    }


def test_a_tool_method_checks_its_arguments_as_a_python_function_would() -> None:
    environment = toolset_class([Tool.from_function(paint).schema])()

    with pytest.raises(TypeError, match=r"^paint\(\) missing a required argument: 'crates'$"):
        environment.paint(counts={}, color="red", pair=[1, "a"], label=1)
    with pytest.raises(TypeError, match=r"^paint\(\) got an unexpected keyword argument 'colour'$"):
        environment.paint(crates=[], counts={}, color="red", colour="red", pair=[1, "a"], label=1)


def test_a_call_with_wrong_arguments_is_an_error_naming_the_called_tool_and_no_python_class() -> None:
    tools = trl_tools(toolset_class([Tool.from_function(paint).schema])())

    for name, wrong in (("end_turn", {"reply": "Done.", "box": "A10"}), ("paint", {"colour": "red"})):
        with pytest.raises(TypeError) as raised:
            tools[name](**wrong)
        assert str(raised.value).startswith(f"{name}() "), str(raised.value)


def _tool(parameters: dict[str, Any], *, name: str = "pack", description: str = "Pack it.") -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def _one(argument: dict[str, Any]) -> dict[str, Any]:
    return _tool({"type": "object", "properties": {"box": {"description": "The box.", **argument}}})


@pytest.mark.parametrize(
    ("tool", "refusal"),
    [
        (
            _one({"type": "object", "properties": {"side": {"type": "integer"}}}),
            "argument 'box': an object with named fields",
        ),
        (_one({"$ref": "#/$defs/Box"}), "argument 'box': its schema uses '\\$ref'"),
        (_one({"allOf": [{"type": "string"}]}), "argument 'box': its schema uses 'allOf'"),
        (_one({"type": "array", "prefixItems": [{"type": "integer"}]}), "only a fixed tuple of two or more"),
        (_one({"enum": [{"a": 1}]}), "cannot be a typing.Literal"),
        (_one({"type": "decimal"}), "unknown JSON Schema type 'decimal'"),
        (
            _tool({"type": "object", "properties": {"box": {"type": "string"}}}),
            "argument 'box' has no description",
        ),
        (
            _tool({"type": "object", "properties": {}}, description="Pack it. Returns: the box."),
            "contains 'Returns:'",
        ),
        (
            _tool({"type": "object", "properties": {}, "required": ["box"]}),
            "requires arguments it does not describe: box",
        ),
        (_tool({"type": "object", "anyOf": []}), "its parameters use 'anyOf'"),
        (_tool({"type": "object", "properties": {}}, name="pack-box"), "not a name a trainer can call"),
        (_tool({"type": "object", "properties": {}}, name="class"), "is a Python keyword"),
        (_tool({"type": "object", "properties": {}}, name="_pack"), "starts with '_'"),
        (_tool({"type": "object", "properties": {}}, name="get_reward"), "is reserved"),
        (
            _tool({"type": "object", "properties": {"self": {"type": "string", "description": "S."}}}),
            "would clash with the method's receiver",
        ),
    ],
)
def test_a_tool_no_typed_signature_can_express_is_refused_naming_the_tool_and_the_construct(
    tool: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(UnsupportedToolError, match=refusal) as refused:
        tool_signature(tool)

    assert f"tool '{tool['function']['name']}'" in str(refused.value)
