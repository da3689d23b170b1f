"""Toolsets: which tools the played agent sees, and the stable names that tell toolsets apart."""

import asyncio
import functools
from pathlib import Path

import pytest
from pydantic import ValidationError

import agent_env
from agent_env import (
    BASH_TOOL,
    AccessChange,
    Env,
    EnvDefinition,
    EpisodeError,
    ErrorCode,
    Toolset,
    ToolsetSpec,
    tool,
    toolset_name,
)
from agent_env._contracts.sandbox import KILL_MARGIN_S

WHARF = Path(__file__).resolve().parents[2] / "examples" / "wharf"
DOCK_TOOLS = ["add_crate", "move_crate", "list_crates"]
PANTRY_TOOLS = ["add_item", "use_item", "check_stock"]


@functools.cache
def envs():
    return agent_env.load_bundle(WHARF).envs


def toolset(*names, role="default", access=(), bash=False) -> Toolset:
    return Toolset(tuple(envs()[n] for n in names), role, tuple(access), bash)


def enable(*tools, role="default", env=None) -> AccessChange:
    return AccessChange(action="enable", role=role, tools="*" if tools == ("*",) else tools, env=env)


def disable(*tools, role="default", env=None) -> AccessChange:
    return AccessChange(action="disable", role=role, tools="*" if tools == ("*",) else tools, env=env)


def offered(ts: Toolset) -> list[str]:
    """The names of the tools the played agent sees, in the order it sees them."""
    return [schema["function"]["name"] for schema in ts.tools]


# Roles and access


def test_a_tool_limited_to_a_role_is_hidden_from_other_roles():
    assert offered(toolset("dock")) == DOCK_TOOLS


def test_a_tool_limited_to_a_role_is_offered_to_that_role():
    assert offered(toolset("dock", role="harbormaster")) == [
        "add_crate",
        "move_crate",
        "remove_crate",
        "list_crates",
    ]


def test_enabling_a_role_limited_tool_offers_it_to_another_role():
    ts = toolset("dock", access=[enable("remove_crate")])

    assert "remove_crate" in offered(ts)


def test_disabling_a_tool_hides_it_from_the_role():
    ts = toolset("dock", role="harbormaster", access=[disable("remove_crate", role="harbormaster")])

    assert offered(ts) == DOCK_TOOLS


def test_disabling_star_hides_every_tool_of_every_env():
    assert offered(toolset("dock", "pantry", access=[disable("*")])) == []


def test_enabling_star_offers_every_tool_including_role_limited_ones():
    assert "remove_crate" in offered(toolset("dock", access=[enable("*")]))


def test_a_change_limited_to_one_env_leaves_the_other_envs_alone():
    assert offered(toolset("dock", "pantry", access=[disable("*", env="dock")])) == PANTRY_TOOLS


def test_a_change_naming_a_tool_of_another_env_changes_nothing():
    assert offered(toolset("dock", "pantry", access=[disable("use_item", env="dock")])) == [
        *DOCK_TOOLS,
        *PANTRY_TOOLS,
    ]


def test_a_later_change_overrides_an_earlier_one():
    ts = toolset("dock", access=[disable("*"), enable("list_crates")])

    assert offered(ts) == ["list_crates"]


def test_an_earlier_change_is_overridden_by_a_later_one_in_the_other_direction():
    ts = toolset("dock", access=[enable("remove_crate"), disable("*")])

    assert offered(ts) == []


def test_env_tools_pairs_each_offered_tool_with_its_env():
    pairs = toolset("dock", "pantry", access=[disable("*", env="dock"), enable("list_crates")]).env_tools

    assert [(env.name, tool.name) for env, tool in pairs] == [
        ("dock", "list_crates"),
        ("pantry", "add_item"),
        ("pantry", "use_item"),
        ("pantry", "check_stock"),
    ]


def test_an_access_change_refuses_an_unknown_action_and_unknown_fields():
    with pytest.raises(ValidationError) as caught:
        AccessChange.model_validate({"action": "allow", "tools": ["list_crates"], "colour": "red"})

    assert "action" in str(caught.value)
    assert "colour" in str(caught.value)


# Tools


def test_tools_come_in_env_order_then_definition_order():
    assert offered(toolset("pantry", "dock")) == [*PANTRY_TOOLS, *DOCK_TOOLS]


def test_tools_are_the_openai_schemas_of_the_env_tools():
    assert toolset("dock").tools[0] == envs()["dock"].tool("add_crate").schema


def test_bash_is_offered_last_when_the_toolset_has_bash():
    tools = toolset("dock", "pantry", bash=True).tools

    assert offered(toolset("dock", "pantry", bash=True)) == [*DOCK_TOOLS, *PANTRY_TOOLS, "bash"]
    assert tools[-1] == BASH_TOOL


def test_bash_is_not_offered_without_bash():
    assert "bash" not in offered(toolset("dock"))


def test_bash_is_offered_alone_to_an_agent_with_no_envs():
    assert toolset(bash=True).tools == [BASH_TOOL]


def test_the_bash_tool_takes_one_required_command():
    parameters = BASH_TOOL["function"]["parameters"]

    assert BASH_TOOL["function"]["name"] == "bash"
    assert parameters["properties"] == {
        "command": {"type": "string", "description": "The bash command to run."}
    }
    assert parameters["required"] == ["command"]
    assert parameters["additionalProperties"] is False


# Calls


def test_a_call_is_answered_by_the_env_whose_tool_it_is_and_a_tool_the_role_may_not_call_is_refused():
    dock = envs()["dock"].cls()
    dock.setup({"crates": [{"crate": "C1", "bay": 2}]})
    pantry = envs()["pantry"].cls()
    pantry.setup({})
    ts = toolset("dock", "pantry")

    def call(name: str, arguments: dict[str, object]) -> str:
        return asyncio.run(
            ts.call(name, arguments, envs={"dock": dock, "pantry": pantry}, shell=None, task_id="t-1")
        )

    assert call("move_crate", {"crate": "C1", "to_bay": 5}) == "crate C1 moved to bay 5"
    assert dock.crates["C1"]["bay"] == 5
    with pytest.raises(EpisodeError) as refused:
        call("remove_crate", {"crate": "C1"})
    assert refused.value.code == ErrorCode.TOOL_NOT_ALLOWED
    assert refused.value.message.startswith(
        "tool 'remove_crate' is not available to role 'default' in task 't-1'"
    )
    with pytest.raises(EpisodeError) as unknown:
        call("move_crates", {})
    assert unknown.value.code == ErrorCode.UNKNOWN_TOOL
    assert "did you mean 'move_crate'?" in unknown.value.message


# Equality and names


def test_equal_toolsets_are_equal_and_hash_alike_so_they_share_a_dict_key():
    one = toolset("dock", access=[enable("remove_crate")])
    other = toolset("dock", access=[AccessChange(action="enable", tools=["remove_crate"])])
    classes = {one: "DockTools"}

    assert one == other
    assert classes[other] == "DockTools"
    assert len({one, other, toolset("dock")}) == 2


@pytest.mark.parametrize(
    ("names", "options"),
    [
        (("dock", "pantry"), {}),
        (("dock",), {"role": "harbormaster"}),
        (("dock",), {"access": [disable("move_crate")]}),
        (("dock",), {"bash": True}),
    ],
)
def test_toolsets_that_differ_in_envs_role_access_or_bash_are_not_equal(names, options):
    assert toolset(*names, **options) != toolset("dock")


NAMES = [
    (("dock",), {}, "dock"),
    (("dock", "pantry"), {}, "dock+pantry"),
    (("dock",), {"bash": True}, "dock+bash"),
    ((), {"bash": True}, "bash"),
    ((), {}, "none"),
    (("dock",), {"role": "captain"}, "dock@captain"),
    (("dock",), {"access": [disable("remove_crate")]}, "dock[-remove_crate]"),
    (("dock",), {"access": [enable("*")]}, "dock[+*]"),
    (("dock",), {"access": [enable("*", env="dock")]}, "dock[+dock.*]"),
    (
        ("dock", "pantry"),
        {"access": [disable("add_crate", "use_item"), enable("list_crates")]},
        "dock+pantry[-add_crate,-use_item,+list_crates]",
    ),
    (
        ("dock",),
        {"role": "captain", "bash": True, "access": [enable("remove_crate", role="captain")]},
        "dock+bash@captain[+remove_crate]",
    ),
]
"""(envs, toolset options, the name they give)."""


@pytest.mark.parametrize(("names", "options", "name"), NAMES, ids=[name for _, _, name in NAMES])
def test_a_toolset_has_a_stable_readable_name(names, options, name):
    made = toolset(*names, **options)

    assert made.name == name
    assert toolset_name(made.env_names, made.role, made.access, made.bash) == name


def test_equal_toolsets_have_the_same_name():
    assert toolset("dock", access=[enable("*")]).name == toolset("dock", access=[enable("*")]).name


def test_the_spec_describes_the_toolset_on_the_wire_by_its_names_and_its_tools_schemas():
    ts = toolset(
        "dock", "pantry", role="harbormaster", access=[disable("use_item", role="harbormaster")], bash=True
    )

    spec = ts.spec(command_timeout_s=10)

    assert spec == ToolsetSpec(
        name="dock+pantry+bash@harbormaster[-use_item]",
        envs=("dock", "pantry"),
        role="harbormaster",
        access=(disable("use_item", role="harbormaster"),),
        bash=True,
        tools=tuple(ts.tools),
        tool_timeouts={"bash": 10 + KILL_MARGIN_S},
    )
    assert spec.tools is not None and spec.tools[-1] == BASH_TOOL
    assert ToolsetSpec.model_validate_json(spec.model_dump_json()) == spec
    assert spec.model_dump(mode="json")["access"] == [
        {"action": "disable", "role": "harbormaster", "tools": ["use_item"], "env": None}
    ]


class Crane(Env):
    """A crane: its lift declares a deadline of its own, its operator's tool another."""

    @tool(timeout_s=2.5)
    def lift(self) -> str:
        """Lift the hook."""
        return "lifted"

    @tool(roles=("operator",), timeout_s=7)
    def swing(self) -> str:
        """Swing the jib."""
        return "swung"

    @tool
    def park(self) -> str:
        """Park the crane."""
        return "parked"


def test_the_spec_lists_each_declared_deadline_beside_the_schemas_and_bash_s_as_its_command_s_plus_margin():
    crane = EnvDefinition.from_class("crane", Crane)
    plain = Toolset((crane,))
    operated = Toolset((crane,), role="operator", access=(disable("lift", role="operator"),), bash=True)

    assert plain.spec(command_timeout_s=30).tool_timeouts == {"lift": 2.5}
    assert operated.spec(command_timeout_s=12).tool_timeouts == {"swing": 7.0, "bash": 12 + KILL_MARGIN_S}
    assert operated.spec(command_timeout_s=12).tools == (
        *(t.schema for t in crane.tools if t.name in ("swing", "park")),
        BASH_TOOL,
    )
    assert Toolset((envs()["dock"],)).spec(command_timeout_s=30).tool_timeouts == {}


def test_a_listed_deadline_adds_no_key_to_any_schema_the_model_sees():
    crane = EnvDefinition.from_class("crane", Crane)

    spec = Toolset((crane,), bash=True).spec(command_timeout_s=12)

    assert spec.tools is not None
    assert [sorted(schema) for schema in spec.tools] == [["function", "type"]] * 3
    functions = [sorted(schema["function"]) for schema in spec.tools]
    assert functions == [["description", "name", "parameters"]] * 3
    assert spec.tools[-1] == BASH_TOOL
