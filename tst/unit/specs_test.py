import agent_env.specs
import agent_env.task
import agent_env.toolset
from agent_env import AccessChange, TaskSpec, ToolsetSpec


def test_the_specs_are_the_same_classes_from_the_package_and_from_their_first_homes():
    assert agent_env.task.TaskSpec is TaskSpec is agent_env.specs.TaskSpec
    assert agent_env.toolset.ToolsetSpec is ToolsetSpec is agent_env.specs.ToolsetSpec
    assert agent_env.toolset.AccessChange is AccessChange is agent_env.specs.AccessChange
    assert agent_env.toolset.DEFAULT_ROLE == agent_env.specs.DEFAULT_ROLE == "default"


def test_a_toolset_spec_from_a_server_that_lists_no_deadlines_reads_as_one_whose_tools_declare_none():
    older = {"name": "dock", "envs": ["dock"], "role": "default", "access": [], "bash": False, "tools": []}

    assert ToolsetSpec.model_validate(older).tool_timeouts == {}
