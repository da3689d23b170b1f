"""Envs: the tools `EnvDefinition.from_class` finds on an env class, and the errors of a badly written one."""

import asyncio
import functools
from pathlib import Path

import pytest

import agent_env
from agent_env import Env, EnvDefinition, tool
from agent_env._error_types import EnvDefinitionError

WHARF = Path(__file__).resolve().parents[2] / "examples" / "wharf"


def run(coroutine):
    """Run a coroutine to its end, failing instead of hanging past a bound."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout=10))


def line_of(text: str) -> int:
    """The number of the one line of this file that starts with `text`."""
    lines = Path(__file__).read_text().splitlines()
    (number,) = [n for n, line in enumerate(lines, start=1) if line.strip().startswith(text)]
    return number


@functools.cache
def dock() -> EnvDefinition:
    return agent_env.load_bundle(WHARF).envs["dock"]


class Shed(Env):
    """Tools defined out of alphabetical order, among methods that are not tools."""

    def helper(self, x: int) -> int:
        return x

    @tool
    def zip_tarp(self, tarp: str) -> str:
        """Zip a tarp shut.

        Args:
            tarp: The tarp's name.
        """
        return f"{tarp} zipped"

    def _private(self) -> None:
        pass

    @tool(roles=("foreman", "keeper"))
    def open_door(self) -> str:
        """Open the shed's door."""
        return "open"

    @tool
    def mend_net(self, net: str, knots: int = 1) -> str:
        """Mend a net.

        Args:
            net: The net's name.
            knots: How many knots to tie.
        """
        return f"{net}: {knots} knots"


class Messy(Env):
    """Three bad tools and one good one."""

    @tool
    def fine(self) -> str:
        """A good tool."""
        return "fine"

    @tool
    def no_summary(self) -> str:
        return ""

    @tool
    def no_hint(self, crate) -> str:
        """Take a crate.

        Args:
            crate: The crate.
        """
        return ""

    @tool
    def bash(self) -> str:
        """Shadow the sandbox's tool."""
        return ""


class Base(Env):
    @tool
    def inherited(self) -> str:
        """A tool from the base class."""
        return "base"


class Derived(Base):
    @tool
    def own(self) -> str:
        """A tool of its own."""
        return "own"


def test_from_class_finds_only_tool_marked_methods_in_definition_order():
    definition = EnvDefinition.from_class("shed", Shed)

    assert [t.name for t in definition.tools] == ["zip_tarp", "open_door", "mend_net"]
    assert (definition.name, definition.cls) == ("shed", Shed)


def test_a_tool_keeps_the_roles_it_was_limited_to_and_others_are_open_to_every_role():
    definition = EnvDefinition.from_class("shed", Shed)

    assert definition.tool("open_door").roles == frozenset({"foreman", "keeper"})
    assert definition.tool("zip_tarp").roles is None


def test_a_method_tool_schema_skips_self():
    parameters = EnvDefinition.from_class("shed", Shed).tool("mend_net").parameters

    assert list(parameters["properties"]) == ["net", "knots"]
    assert parameters["required"] == ["net"]


def test_a_tool_is_looked_up_by_name_and_an_unknown_name_gives_none():
    definition = EnvDefinition.from_class("shed", Shed)

    assert definition.tool("zip_tarp").description == "Zip a tarp shut."
    assert definition.tool("helper") is None


def test_a_method_tool_is_called_on_the_env_instance():
    definition = EnvDefinition.from_class("shed", Shed)

    assert run(definition.tool("mend_net").call(Shed(), {"net": "trawl", "knots": 3})) == "trawl: 3 knots"


def test_tools_inherited_from_a_base_env_are_found():
    assert {t.name for t in EnvDefinition.from_class("derived", Derived).tools} == {"inherited", "own"}


def test_a_class_with_several_bad_tools_lists_one_error_per_bad_tool_with_its_line():
    with pytest.raises(EnvDefinitionError) as caught:
        EnvDefinition.from_class("messy", Messy)
    errors = {e.tool: e for e in caught.value.errors}

    assert caught.value.env == "messy"
    assert set(errors) == {"bash", "no_hint", "no_summary"}
    assert errors["no_summary"].line == line_of("def no_summary(") - 1
    assert errors["no_hint"].line == line_of("def no_hint(") - 1
    assert errors["bash"].line == line_of("def bash(") - 1
    assert errors["no_hint"].reasons == ("argument 'crate' has no type hint; annotate it",)


def test_the_env_definition_error_message_names_the_env_each_tool_and_why():
    with pytest.raises(EnvDefinitionError) as caught:
        EnvDefinition.from_class("messy", Messy)
    message = str(caught.value)

    assert message.startswith("env 'messy': ")
    assert "tool 'no_summary': has no docstring summary" in message
    assert "tool 'no_hint': argument 'crate' has no type hint" in message
    assert "tool 'bash': the name is reserved" in message


def test_a_static_tool_is_called_without_the_instance():
    class Tally(Env):
        @staticmethod
        @tool
        def double(x: int) -> int:
            """Double a number.

            Args:
                x: The number.
            """
            return 2 * x

    definition = EnvDefinition.from_class("tally", Tally)

    assert list(definition.tool("double").parameters["properties"]) == ["x"]
    assert run(definition.tool("double").call(Tally(), {"x": 21})) == "42"


def test_a_tool_mark_above_staticmethod_is_found():
    class Tally(Env):
        @tool
        @staticmethod
        def triple(x: int) -> int:
            """Triple a number.

            Args:
                x: The number.
            """
            return 3 * x

    definition = EnvDefinition.from_class("tally", Tally)

    assert run(definition.tool("triple").call(Tally(), {"x": 14})) == "42"


def test_a_classmethod_tool_is_called_with_its_class():
    class Tally(Env):
        base = 40

        @classmethod
        @tool
        def add(cls, x: int) -> int:
            """Add to the base.

            Args:
                x: The number.
            """
            return cls.base + x

    definition = EnvDefinition.from_class("tally", Tally)

    assert list(definition.tool("add").parameters["properties"]) == ["x"]
    assert run(definition.tool("add").call(Tally(), {"x": 2})) == "42"


def test_a_decorated_tool_runs_its_decorator_when_called():
    log = []

    def logged(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            log.append(method.__name__)
            return method(self, *args, **kwargs)

        return wrapper

    class Tally(Env):
        @tool
        @logged
        def add(self, x: int, y: int) -> int:
            """Add two numbers.

            Args:
                x: One number.
                y: The other.
            """
            return x + y

    definition = EnvDefinition.from_class("tally", Tally)

    assert list(definition.tool("add").parameters["properties"]) == ["x", "y"]
    assert run(definition.tool("add").call(Tally(), {"x": 40, "y": 2})) == "42"
    assert log == ["add"]


def test_has_items_is_true_only_when_the_class_defines_items():
    assert dock().has_items
    assert not EnvDefinition.from_class("shed", Shed).has_items


def test_the_base_env_keeps_its_seed_and_refuses_items_naming_the_class():
    shed = Shed()
    shed.setup({"tarps": ["blue"]})

    with pytest.raises(NotImplementedError) as caught:
        shed.items()

    assert shed.seed == {"tarps": ["blue"]}
    assert "Shed does not define items()" in str(caught.value)


def test_the_dock_exposes_its_crate_tools_in_definition_order():
    assert [t.name for t in dock().tools] == ["add_crate", "move_crate", "remove_crate", "list_crates"]


def test_the_dock_limits_remove_crate_to_the_harbormaster():
    assert {t.name: t.roles for t in dock().tools} == {
        "add_crate": None,
        "move_crate": None,
        "remove_crate": frozenset({"harbormaster"}),
        "list_crates": None,
    }


def test_the_dock_describes_its_bays_and_kinds_to_the_model():
    properties = dock().tool("add_crate").parameters["properties"]

    assert properties["bay"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 6,
        "description": "The bay to store it in, from 1 to 6.",
    }
    assert properties["kind"]["enum"] == ["dry", "cold", "fragile"]
    assert properties["kind"]["default"] == "dry"


def test_a_dock_tool_changes_the_items_of_its_instance():
    instance = dock().cls()
    instance.setup({"crates": [{"crate": "C1", "bay": 1}]})

    answer = run(dock().tool("move_crate").call(instance, {"crate": "C1", "to_bay": 4}))

    assert answer == "crate C1 moved to bay 4"
    assert instance.items() == [{"crate": "C1", "bay": 4, "kind": "dry"}]
