import pytest
from pydantic import ValidationError

import agent_env._specs
import agent_env._task
import agent_env._toolset
from agent_env import AccessChange, ScriptedTurn, Solution, TaskSpec, ToolsetSpec
from agent_env._error_types import validation_problems
from agent_env._specs import STEP_TAGS


def test_the_specs_are_the_same_classes_from_the_package_and_from_their_first_homes():
    assert agent_env._task.TaskSpec is TaskSpec is agent_env._specs.TaskSpec
    assert agent_env._toolset.ToolsetSpec is ToolsetSpec is agent_env._specs.ToolsetSpec
    assert agent_env._toolset.AccessChange is AccessChange is agent_env._specs.AccessChange
    assert agent_env._toolset.DEFAULT_ROLE == agent_env._specs.DEFAULT_ROLE == "default"


def test_a_toolset_spec_from_a_server_that_lists_no_deadlines_reads_as_one_whose_tools_declare_none():
    older = {"name": "dock", "envs": ["dock"], "role": "default", "access": [], "bash": False, "tools": []}

    assert ToolsetSpec.model_validate(older).tool_timeouts == {}


def test_each_call_of_a_turn_is_a_step_of_its_own_and_a_list_of_calls_is_one_step_made_together():
    turn = ScriptedTurn.model_validate(
        {
            "calls": [
                {"tool": "find_user", "arguments": {"email": "ada@example.com"}},
                [{"tool": "unlock_account", "arguments": {"username": "ada"}}, {"tool": "add_note"}],
                {"tool": "account_status", "arguments": {"username": "ada"}},
            ]
        }
    )

    assert [[call.tool for call in step] for step in turn.steps] == [
        ["find_user"],
        ["unlock_account", "add_note"],
        ["account_status"],
    ]
    assert [call.tool for call in turn.all_calls] == [
        "find_user",
        "unlock_account",
        "add_note",
        "account_status",
    ]


def test_a_solution_written_before_steps_reads_as_it_was_written_each_of_its_calls_a_step():
    line = {
        "id": "t1",
        "turns": [{"calls": [{"tool": "a", "arguments": {"x": 1}}, {"tool": "b"}], "reply": "ok"}],
    }

    solution = Solution.model_validate(line)

    assert [[call.tool for call in step] for step in solution.turns[0].steps] == [["a"], ["b"]]
    assert solution.model_dump(exclude_defaults=True) == {
        "id": "t1",
        "turns": [{"calls": [{"tool": "a", "arguments": {"x": 1}}, {"tool": "b"}], "reply": "ok"}],
    }


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        (
            [{"tool": "a"}, []],
            "field 'calls': step 2 is an empty list: remove it, or list in it the calls the agent makes "
            "together",
        ),
        (
            [[[{"tool": "a"}]]],
            "field 'calls': step 1 holds a list in a list: a step is one list of calls made together; write "
            "calls made one after the other as entries of their own",
        ),
        (
            ["a"],
            'field \'calls.0\': each entry of "calls" is a call, {"tool": NAME, "arguments": {...}}, or a '
            "list of calls the agent makes together in one answer",
        ),
        (
            [[{"tool": "a"}, {"tol": "b"}]],
            "field 'calls.0.1.tol' is unknown; remove it or check its spelling",
        ),
    ],
)
def test_a_step_of_the_wrong_shape_is_named_by_its_place_saying_how_to_write_it(calls, problem):
    with pytest.raises(ValidationError) as caught:
        ScriptedTurn.model_validate({"calls": calls})

    assert any(
        message.startswith(problem)
        for message in validation_problems(caught.value, noun="field", tags=STEP_TAGS)
    )
