"""Tools: the JSON Schema a typed, documented function gives, and how its arguments are checked."""

import asyncio
import enum
import inspect
import json
import threading
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from agent_env import Env, EnvDefinition, EpisodeError, Tool, ToolDefinitionError, tool
from agent_env._tools import render_result


def run(coroutine):
    """Run a coroutine to its end, failing instead of hanging past a bound."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout=10))


def schema_of(function) -> dict:
    return Tool.from_function(function).parameters


def reasons_of(function) -> tuple[str, ...]:
    with pytest.raises(ToolDefinitionError) as caught:
        Tool.from_function(function)
    return caught.value.reasons


def keywords(node) -> set[str]:
    """Every JSON Schema keyword used in `node`; property names are not keywords."""
    if isinstance(node, list):
        return set().union(*map(keywords, node))
    if not isinstance(node, dict):
        return set()
    found = set(node)
    for key, value in node.items():
        children = value.values() if key == "properties" else [value]
        found |= set().union(*map(keywords, children))
    return found


def gist(reason: str) -> str:
    """What a definition error's reason says, without its details in brackets or its fix after `;`."""
    return reason.split(" (")[0].split(";")[0]


def invalid(tool: Tool, arguments) -> str:
    """The message of the INVALID_ARGUMENTS error that `arguments` gives."""
    with pytest.raises(EpisodeError) as caught:
        tool.validate(arguments)
    assert caught.value.code == "INVALID_ARGUMENTS"
    return caught.value.message


def signed(name: str, arguments: dict[str, type]):
    """A function called `name` whose signature is `arguments`, for names `def` cannot spell."""

    def function(*args, **kwargs):
        return "done"

    function.__name__ = function.__qualname__ = name
    function.__signature__ = inspect.Signature(
        [
            inspect.Parameter(arg, inspect.Parameter.POSITIONAL_ONLY, annotation=t)
            for arg, t in arguments.items()
        ]
    )
    function.__annotations__ = dict(arguments)
    documented = "".join(f"\n    {arg}: The {arg}." for arg in arguments)
    function.__doc__ = f"Do the thing.\n\nArgs:{documented}"
    return function


class Kind(enum.Enum):
    DRY = "dry"
    COLD = "cold"


class Point(BaseModel):
    x: int
    y: int


class Crate(BaseModel):
    label: str
    at: Point


class Node(BaseModel):
    children: list["Node"] = []


STORED = {"crate": "C1", "count": 2, "weight": 2.5, "fragile": False}
"""Good arguments of `store`."""
PLACED = {"crate": {"label": "C1", "at": {"x": 1, "y": 2}}, "title": "t", "bay": 2}
"""Good arguments of `place`."""


def store(crate: str, count: int, weight: float, fragile: bool) -> str:
    """Store some crates.

    They wait on the dock until a ship takes them.

    Args:
        crate: The crate's label.
        count: How many crates.
        weight: The weight of one crate, in kilograms.
        fragile: Whether to handle them with care.
    """
    return f"{count} x {crate}"


def sort_crate(kind: Literal["dry", "cold"], grade: Kind, bays: list[int], load: dict[str, int]) -> str:
    """Sort a crate.

    Args:
        kind: What the crate holds.
        grade: The crate's grade.
        bays: Bays it may go to.
        load: Crates per bay.
    """
    return "sorted"


def place(crate: Crate, title: str, bay: Annotated[int, Field(ge=1, le=6)], note: str | None = None) -> str:
    """Place a crate.

    Args:
        crate: The crate.
        title: The crate's title on the manifest.
        bay: The bay, from 1 to 6.
        note: A note for the manifest.
    """
    return f"{crate.label} in bay {bay}"


# The schema


def test_str_int_float_and_bool_become_string_integer_number_and_boolean_with_their_descriptions():
    properties = schema_of(store)["properties"]

    assert properties == {
        "crate": {"type": "string", "description": "The crate's label."},
        "count": {"type": "integer", "description": "How many crates."},
        "weight": {"type": "number", "description": "The weight of one crate, in kilograms."},
        "fragile": {"type": "boolean", "description": "Whether to handle them with care."},
    }


def test_arguments_without_a_default_are_required_in_signature_order():
    assert schema_of(store)["required"] == ["crate", "count", "weight", "fragile"]


def test_a_literal_argument_becomes_an_enum_of_its_values():
    assert schema_of(sort_crate)["properties"]["kind"] == {
        "type": "string",
        "enum": ["dry", "cold"],
        "description": "What the crate holds.",
    }


def test_an_enum_argument_becomes_an_enum_of_its_values():
    grade = schema_of(sort_crate)["properties"]["grade"]

    assert grade["enum"] == ["dry", "cold"]
    assert grade["type"] == "string"
    assert grade["description"] == "The crate's grade."


def test_a_list_of_int_becomes_an_array_of_integers():
    bays = schema_of(sort_crate)["properties"]["bays"]

    assert bays["type"] == "array"
    assert bays["items"] == {"type": "integer"}


def test_a_dict_of_str_to_int_becomes_an_object_of_integers():
    load = schema_of(sort_crate)["properties"]["load"]

    assert load["type"] == "object"
    assert load["additionalProperties"] == {"type": "integer"}


def test_an_optional_argument_is_not_required_and_keeps_its_default():
    schema = schema_of(place)

    assert "note" not in schema["required"]
    assert schema["properties"]["note"]["default"] is None
    assert {"type": "string"} in schema["properties"]["note"]["anyOf"]


def test_an_annotated_bound_becomes_minimum_and_maximum():
    bay = schema_of(place)["properties"]["bay"]

    assert (bay["type"], bay["minimum"], bay["maximum"]) == ("integer", 1, 6)


def test_a_nested_model_is_inlined_with_no_refs_and_no_titles():
    schema = schema_of(place)
    text = json.dumps(schema)

    assert schema["properties"]["crate"]["properties"]["at"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    }
    assert "$defs" not in text
    assert "$ref" not in text
    assert "title" not in keywords(schema)


def test_an_argument_named_title_is_kept():
    schema = schema_of(place)

    assert schema["properties"]["title"] == {
        "type": "string",
        "description": "The crate's title on the manifest.",
    }
    assert "title" in schema["required"]


def test_the_schema_has_the_openai_function_shape():
    tool = Tool.from_function(store)

    assert tool.schema == {
        "type": "function",
        "function": {
            "name": "store",
            "description": "Store some crates. They wait on the dock until a ship takes them.",
            "parameters": tool.parameters,
        },
    }
    assert tool.parameters["type"] == "object"
    assert tool.parameters["additionalProperties"] is False


def test_a_tool_with_no_arguments_has_empty_properties_and_required():
    def count_crates() -> int:
        """Count the crates on the dock."""
        return 0

    assert schema_of(count_crates) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_arguments_named_like_pydantic_internals_are_described_and_passed_through():
    def configure(model_config: str, schema: str, _private: int) -> str:
        """Configure the crane.

        Args:
            model_config: The crane's model.
            schema: The lifting schema.
            _private: A private number.
        """
        return f"{model_config}/{schema}/{_private}"

    tool = Tool.from_function(configure)

    assert list(tool.parameters["properties"]) == ["model_config", "schema", "_private"]
    assert run(tool.call(None, {"model_config": "K2", "schema": "tandem", "_private": 7})) == "K2/tandem/7"


# Definition errors


@pytest.mark.parametrize("doc", [None, "", "   \n"])
def test_a_tool_without_a_docstring_summary_is_refused(doc):
    def lift() -> str:
        return "lifted"

    lift.__doc__ = doc

    reasons = reasons_of(lift)

    assert list(reasons) == ["has no docstring summary; say what the tool does in its first line"]


def test_a_tool_without_a_docstring_is_one_reason_naming_each_argument_to_describe_not_one_more_each():
    def lift(weight: int, height: int = 1) -> str:
        return "lifted"

    assert list(reasons_of(lift)) == [
        "has no docstring summary; say what the tool does in its first line, then describe each "
        "argument under Args: ('weight: ...', 'height: ...')"
    ]


def test_an_undocumented_argument_is_refused_with_how_to_document_it():
    def lift(weight: int, height: int) -> str:
        """Lift a crate.

        Args:
            weight: The weight.
        """

    assert reasons_of(lift) == ("argument 'height' is not documented; add 'height: ...' under Args:",)


def test_a_documented_argument_the_signature_lacks_is_refused():
    def lift(weight: int) -> str:
        """Lift a crate.

        Args:
            weight: The weight.
            height: How high.
        """

    assert reasons_of(lift) == ("documents argument 'height', which the signature does not have",)


def test_an_argument_without_a_type_hint_is_refused():
    def lift(weight) -> str:
        """Lift a crate.

        Args:
            weight: The weight.
        """

    assert reasons_of(lift) == ("argument 'weight' has no type hint; annotate it",)


def test_star_args_and_star_star_kwargs_are_refused():
    def lift(*crates: str, **options: int) -> str:
        """Lift crates.

        Args:
            crates: The crates.
            options: Lifting options.
        """

    reasons = reasons_of(lift)

    assert "*crates cannot be described to a model; name every argument" in reasons
    assert "**options cannot be described to a model; name every argument" in reasons


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("lift-crate", "is not a name a trainer can call (it must match ^[A-Za-z_][A-Za-z0-9_]*$)"),
        ("class", "is a Python keyword"),
        ("_lift", "starts with '_', and TRL never offers such methods as tools"),
        ("reset", "is reserved"),
        ("get_reward", "is reserved"),
        ("end_turn", "is reserved"),
        ("bash", "is reserved"),
    ],
)
def test_a_tool_name_a_trainer_cannot_call_is_refused(name, why):
    with pytest.raises(ToolDefinitionError) as caught:
        Tool.from_function(signed(name, {"weight": int}))

    (reason,) = caught.value.reasons
    assert reason.startswith(f"the name {why}")
    assert reason.endswith("rename it")
    assert caught.value.tool == name
    assert str(caught.value) == f"tool '{name}': {reason}"


@pytest.mark.parametrize(
    ("argument", "why"),
    [
        ("café", "is not a name a trainer can call (it must match ^[A-Za-z_][A-Za-z0-9_]*$)"),
        ("class", "is a Python keyword"),
        ("self", "would clash with the method's receiver"),
    ],
)
def test_an_argument_name_a_trainer_cannot_pass_is_refused(argument, why):
    reasons = reasons_of(signed("lift", {argument: int}))

    assert len(reasons) == 1
    assert reasons[0].startswith(f"argument '{argument}' {why}")
    assert reasons[0].endswith("rename it")


def test_an_argument_type_with_no_json_schema_is_refused_with_the_types_that_work():
    def lift(lock: asyncio.Lock) -> str:
        """Lift with a lock.

        Args:
            lock: A lock.
        """

    (reason,) = reasons_of(lift)

    assert "has no JSON Schema" in reason
    assert "Lock" in reason
    assert "use str, int, float, bool, list, dict, Literal, an Enum or a pydantic model" in reason


def test_a_recursive_model_argument_is_refused():
    def plant(tree: Node) -> str:
        """Plant a tree.

        Args:
            tree: The tree.
        """

    (reason,) = reasons_of(plant)

    assert "has no JSON Schema" in reason
    assert "Node is a recursive type" in reason


def test_a_tool_with_several_problems_lists_all_of_them_at_once():
    def lift(weight: int, height, lock: asyncio.Lock, *extra: int) -> str:
        pass

    lift.__name__ = "bash"

    with pytest.raises(ToolDefinitionError) as caught:
        Tool.from_function(lift)
    reasons = caught.value.reasons

    assert [gist(r) for r in reasons] == [
        "the name is reserved",
        "has no docstring summary",
        "argument 'height' has no type hint",
        "*extra cannot be described to a model",
        "an argument's type has no JSON Schema",
    ]
    assert str(caught.value).count("tool 'bash': ") == len(reasons)


# The tool's own deadline


class Crane(Env):
    """A crane whose lift declares its own deadline."""

    @tool(timeout_s=2.5)
    def lift(self, crate: str) -> str:
        """Lift a crate.

        Args:
            crate: The crate's label.
        """
        return f"lifted {crate}"

    @tool(roles=("operator",), timeout_s=1)
    def lower(self) -> str:
        """Lower the hook."""
        return "lowered"

    @tool
    def park(self) -> str:
        """Park the crane."""
        return "parked"


def test_a_tool_declares_its_own_deadline_with_timeout_s_and_its_env_keeps_it_in_seconds():
    crane = EnvDefinition.from_class("crane", Crane)

    assert crane.tool("lift").timeout_s == 2.5
    assert crane.tool("lower").timeout_s == 1.0 and isinstance(crane.tool("lower").timeout_s, float)
    assert crane.tool("lower").roles == frozenset({"operator"})
    assert crane.tool("park").timeout_s is None
    assert Tool.from_function(store, timeout_s=3).timeout_s == 3.0


def test_a_declared_deadline_leaves_the_schema_the_model_sees_unchanged():
    lift = EnvDefinition.from_class("crane", Crane).tool("lift")

    assert lift.schema == {
        "type": "function",
        "function": {
            "name": "lift",
            "description": "Lift a crate.",
            "parameters": {
                "type": "object",
                "properties": {"crate": {"type": "string", "description": "The crate's label."}},
                "required": ["crate"],
                "additionalProperties": False,
            },
        },
    }
    assert Tool.from_function(store, timeout_s=3).schema == Tool.from_function(store).schema


@pytest.mark.parametrize("timeout_s", [0, -1.5, True, "30", float("nan"), float("inf")])
def test_a_deadline_not_a_positive_number_of_seconds_is_refused_at_the_decorator_saying_how_to_declare_one(
    timeout_s,
):
    with pytest.raises(ToolDefinitionError) as caught:

        @tool(timeout_s=timeout_s)
        def lift(crate: str) -> str:
            """Lift a crate.

            Args:
                crate: The crate's label.
            """
            return crate

    assert str(caught.value) == (
        f"tool 'lift': timeout_s must be a number of seconds > 0, got {timeout_s!r}; declare the tool's "
        "deadline as @tool(timeout_s=30), or leave timeout_s out for none of its own"
    )


def test_a_bad_deadline_given_to_from_function_is_one_of_the_reasons_the_tool_is_refused():
    def lift(height) -> str:
        """Lift a crate."""

    with pytest.raises(ToolDefinitionError) as caught:
        Tool.from_function(lift, timeout_s=0)

    assert [gist(r) for r in caught.value.reasons] == [
        "timeout_s must be a number of seconds > 0, got 0",
        "argument 'height' has no type hint",
    ]


# Arguments


def test_an_argument_of_the_wrong_type_is_invalid_and_the_message_names_it_and_what_was_expected():
    message = invalid(Tool.from_function(store), {**STORED, "count": "many"})

    assert message.startswith("store: ")
    assert "argument 'count'" in message
    assert "valid integer" in message
    assert '"many"' in message


def test_a_missing_argument_is_invalid_and_named():
    message = invalid(Tool.from_function(store), {k: v for k, v in STORED.items() if k != "fragile"})

    assert message == "store: argument 'fragile' is required"


def test_an_unknown_argument_is_invalid_and_the_message_lists_the_known_ones():
    message = invalid(Tool.from_function(store), {**STORED, "colour": "red"})

    assert message == (
        "store: argument 'colour' is unknown (arguments: crate, count, weight, fragile); "
        "remove it or check its spelling"
    )


def test_every_bad_argument_is_named_in_one_message():
    message = invalid(Tool.from_function(store), {"crate": 7, "weight": 2.5, "fragile": False})

    assert "argument 'crate'" in message
    assert "valid string" in message
    assert "argument 'count' is required" in message


@pytest.mark.parametrize("arguments", [["C1", 2], "C1", None])
def test_arguments_that_are_not_a_json_object_are_invalid(arguments):
    message = invalid(Tool.from_function(store), arguments)

    assert message == f"store: arguments must be a JSON object, not {type(arguments).__name__}"


def test_a_number_in_a_string_is_taken_as_the_number():
    arguments = Tool.from_function(store).validate(
        {"crate": "C1", "count": "3", "weight": "2.5", "fragile": "true"}
    )

    assert arguments == {"crate": "C1", "count": 3, "weight": 2.5, "fragile": True}


def test_an_argument_outside_its_bounds_is_invalid():
    message = invalid(Tool.from_function(place), {**PLACED, "bay": 7})

    assert "argument 'bay'" in message
    assert "less than or equal to 6" in message


def test_a_bad_field_of_a_nested_model_is_named_by_its_path():
    message = invalid(
        Tool.from_function(place), {**PLACED, "crate": {"label": "C1", "at": {"x": "left", "y": 0}}}
    )

    assert "argument 'crate.at.x'" in message


def test_validate_gives_enums_and_models_as_the_function_takes_them_and_fills_defaults():
    arguments = Tool.from_function(sort_crate).validate(
        {"kind": "dry", "grade": "cold", "bays": [1], "load": {}}
    )
    placed = Tool.from_function(place).validate(PLACED)

    assert arguments["grade"] is Kind.COLD
    assert placed["crate"] == Crate(label="C1", at=Point(x=1, y=2))
    assert placed["note"] is None


# Calls


def test_a_sync_tool_runs_off_the_event_loop_thread():
    seen = {}

    def where() -> str:
        """Say where it ran."""
        seen["tool"] = threading.get_ident()
        return "here"

    async def main():
        seen["loop"] = threading.get_ident()
        return await Tool.from_function(where).call(None, {})

    run(main())

    assert seen["tool"] != seen["loop"]


def test_an_async_tool_runs_on_the_event_loop_thread():
    seen = {}

    async def where() -> str:
        """Say where it ran."""
        seen["tool"] = threading.get_ident()
        return "here"

    async def main():
        seen["loop"] = threading.get_ident()
        return await Tool.from_function(where).call(None, {})

    assert run(main()) == "here"
    assert seen["tool"] == seen["loop"]


def test_a_method_tool_is_called_on_the_instance_it_is_given():
    class Counter:
        total = 40

        def add(self, amount: int) -> int:
            """Add to the total.

            Args:
                amount: How much to add.
            """
            self.total += amount
            return self.total

    counter = Counter()
    tool = Tool.from_function(Counter.add, method=True)

    assert run(tool.call(counter, {"amount": 2})) == "42"
    assert counter.total == 42


def test_a_tool_that_raises_gives_a_tool_error_keeping_its_message():
    def lift(weight: int) -> str:
        """Lift a crate.

        Args:
            weight: The weight.
        """
        raise ValueError(f"{weight} kg is too heavy for the crane")

    with pytest.raises(EpisodeError) as caught:
        run(Tool.from_function(lift).call(None, {"weight": 900}))

    assert caught.value.code == "TOOL_ERROR"
    assert caught.value.message == "lift failed: ValueError: 900 kg is too heavy for the crane"


def test_an_episode_error_a_tool_raises_keeps_its_own_code():
    async def lift() -> str:
        """Lift a crate."""
        raise EpisodeError("CRANE_BUSY", "the crane is busy")

    with pytest.raises(EpisodeError) as caught:
        run(Tool.from_function(lift).call(None, {}))

    assert (caught.value.code, caught.value.message) == ("CRANE_BUSY", "the crane is busy")


def test_invalid_arguments_never_reach_the_tool():
    calls = []

    def lift(weight: int) -> str:
        """Lift a crate.

        Args:
            weight: The weight.
        """
        calls.append(weight)
        return "lifted"

    with pytest.raises(EpisodeError) as caught:
        run(Tool.from_function(lift).call(None, {"weight": "heavy"}))

    assert caught.value.code == "INVALID_ARGUMENTS"
    assert calls == []


def test_a_call_renders_what_the_tool_returns():
    def manifest() -> dict:
        """The dock's manifest."""
        return {"C1": {"bay": 2}}

    assert run(Tool.from_function(manifest).call(None, {})) == '{"C1": {"bay": 2}}'


# Results


def test_a_string_result_is_rendered_unchanged():
    assert render_result("crate C1 stored\n") == "crate C1 stored\n"


def test_a_dict_or_list_result_is_rendered_as_json_keeping_non_ascii_text():
    assert render_result({"crate": "Café", "bays": [1, 2]}) == '{"crate": "Café", "bays": [1, 2]}'
    assert json.loads(render_result([{"bay": 1}, None, True])) == [{"bay": 1}, None, True]


@pytest.mark.parametrize(
    ("value", "text"),
    [(3, "3"), (2.5, "2.5"), (True, "true"), (None, "null"), (float("nan"), "null"), (float("inf"), "null")],
)
def test_a_number_a_boolean_or_none_is_rendered_as_json_as_pydantic_would_render_it(value: object, text: str):
    assert render_result(value) == text


def test_a_pydantic_model_result_is_rendered_as_json():
    assert json.loads(render_result(Crate(label="C1", at=Point(x=1, y=2)))) == {
        "label": "C1",
        "at": {"x": 1, "y": 2},
    }


def test_an_enum_in_a_result_is_rendered_as_its_value():
    assert render_result({"grade": Kind.COLD}) == '{"grade": "cold"}'


def test_a_docstring_of_only_args_is_refused_for_want_of_a_summary_not_read_as_another_style():
    def lift(weight: int) -> str:
        """Args:
        weight: How heavy.
        """
        return "lifted"

    reasons = reasons_of(lift)

    assert "has no docstring summary; say what the tool does in its first line" in reasons
    assert not any(
        "Args:" in reason and "not documented" not in reason and "Google" not in reason for reason in reasons
    )


def test_a_docstring_that_is_not_google_style_is_refused_saying_how_to_write_one():
    def lift(weight: int) -> str:
        """Lift a crate.

        Args:
        """
        return "lifted"

    reasons = reasons_of(lift)

    assert any("not Google style" in reason and "'Args:'" in reason for reason in reasons)
