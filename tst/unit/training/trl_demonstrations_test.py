"""`AgentEnv.demonstrations`: a split's reference plays, played on a real server on loopback, as the
conversations TRL's SFTTrainer takes, shaped as TRL 1.16's tool-calling loop shapes a GRPO rollout."""

from __future__ import annotations

import inspect
import json
import warnings
from typing import Any

import httpx
import pytest
from transformers.utils.chat_template_utils import get_json_schema

from agent_env import Solution
from agent_env.testing import FakeTask
from agent_env.training.trl import (
    TASK_OVER,
    AgentEnv,
    DemonstrationError,
    DemonstrationWarning,
    UnknownSplitError,
)
from tst.support.serving import Serve
from tst.support.tools import add_crate, jam_crane
from tst.support.waiting import until
from tst.support.wharf import WHARF
from tst.unit.training._trl import Open, dock_task

pytestmark = pytest.mark.needs("trl_installed")


Call = tuple[str, dict[str, Any]]


def script(task_id: str, *turns: tuple[list[Call | list[Call]], str], expected: float = 1.0) -> Solution:
    """A reference play: per turn, its steps and its reply; a step is a call as (tool, arguments), or
    a list of them, made together."""

    def written(step: Call | list[Call]) -> Any:
        if isinstance(step, list):
            return [written(call) for call in step]
        return {"tool": step[0], "arguments": step[1]}

    return Solution.model_validate(
        {
            "id": task_id,
            "turns": [{"calls": [written(step) for step in calls], "reply": reply} for calls, reply in turns],
            "expected_score": expected,
        }
    )


STORE_C1 = ([("add_crate", {"crate": "C1", "bay": 2})], "Stored C1.")


def calling(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls],
    }


def answer(name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "name": name, "content": content}


def test_the_wharfs_demonstrations_are_a_row_per_task_with_its_reference_play_and_the_servers_results() -> (
    None
):
    with AgentEnv.local(WHARF) as env:
        demonstrations = env.demonstrations("train")
        prompts = env.dataset["prompt"]

    rows = demonstrations.to_list()
    assert demonstrations.column_names == ["messages", "tools", "split", "index", "id"]
    assert [(row["split"], row["index"]) for row in rows] == [("train", i) for i in range(len(prompts))]
    row = next(row for row in rows if row["id"] == "store-then-move-000")
    assert row["messages"] == [
        *prompts[row["index"]],
        calling(("add_crate", {"crate": "C16", "bay": 2, "kind": "dry"})),
        answer("add_crate", "crate C16 (dry) stored in bay 2"),
        calling(("end_turn", {"reply": "Stored."})),
        answer("end_turn", "Change of plan: move the crate you just stored to bay 6."),
        calling(("move_crate", {"crate": "C16", "to_bay": 6})),
        answer("move_crate", "crate C16 moved to bay 6"),
        calling(("end_turn", {"reply": "Moved."})),
        answer("end_turn", TASK_OVER),
        {"role": "assistant", "content": ""},
    ]


def test_each_call_of_a_turn_is_a_step_of_its_own_answered_before_the_next_and_the_reply_comes_after(
    serve: Serve, open_env: Open
) -> None:
    counted = ([("list_crates", {}), ("add_crate", {"crate": "C1", "bay": 2})], "One crate, then two.")
    task = dock_task(solution=script("store", counted))
    env = open_env(serve({"train": [task]}).url)

    (row,) = env.demonstrations().to_list()

    assert row["messages"][2:] == [
        calling(("list_crates", {})),
        answer("list_crates", "C1 in bay 2"),
        calling(("add_crate", {"crate": "C1", "bay": 2})),
        answer("add_crate", "stored dry crate C1 in bay 2"),
        calling(("end_turn", {"reply": "One crate, then two."})),
        answer("end_turn", TASK_OVER),
        {"role": "assistant", "content": ""},
    ]


def test_calls_written_as_one_list_are_one_assistant_message_and_their_results_follow_it(
    serve: Serve, open_env: Open
) -> None:
    together = ([[("list_crates", {}), ("add_crate", {"crate": "C1", "bay": 2})]], "Listed and stored.")
    task = dock_task(solution=script("store", together))
    env = open_env(serve({"train": [task]}).url)

    (row,) = env.demonstrations().to_list()

    assert row["messages"][2:] == [
        calling(("list_crates", {}), ("add_crate", {"crate": "C1", "bay": 2})),
        answer("list_crates", "C1 in bay 2"),
        answer("add_crate", "stored dry crate C1 in bay 2"),
        calling(("end_turn", {"reply": "Listed and stored."})),
        answer("end_turn", TASK_OVER),
        {"role": "assistant", "content": ""},
    ]


def test_a_row_read_back_has_exactly_the_keys_of_the_messages_and_tools_it_was_built_from(
    serve: Serve, open_env: Open
) -> None:
    tasks = [
        dock_task("store", solution=script("store", STORE_C1)),
        dock_task("count", solution=script("count", ([("list_crates", {})], "1")), score=1.0),
    ]
    env = open_env(serve({"train": tasks}).url)

    rows = env.demonstrations().to_list()

    listing = rows[1]["messages"][2]
    assert listing == calling(("list_crates", {}))
    assert rows[0]["messages"][2] == calling(("add_crate", {"crate": "C1", "bay": 2}))
    assert "bay" not in json.dumps(listing) and "null" not in json.dumps(rows)
    assert [set(schema["function"]["parameters"].get("properties", {})) for schema in rows[1]["tools"]] == [
        {"crate", "bay", "kind"},
        {"reply"},
        {"crate"},
        set(),
    ]


def test_the_tools_column_is_the_factorys_tools_as_grpo_trainer_lists_and_renders_them(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task(solution=script("store", STORE_C1))]}).url)
    environment = env.factory()
    offered = [  # as GRPOTrainer lists an environment's tools, and transformers renders each
        get_json_schema(getattr(environment, name))
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]

    (row,) = env.demonstrations().to_list()

    assert row["tools"] == offered
    assert [tool["function"]["name"] for tool in row["tools"]] == [
        "add_crate",
        "end_turn",
        "jam_crane",
        "list_crates",
    ]


def test_a_tool_call_that_fails_reaches_its_demonstration_as_trl_shows_the_factorys_tool_error(
    serve: Serve, open_env: Open
) -> None:
    jammed = ([("jam_crane", {"crate": "C1"}), ("add_crate", {"crate": "C1", "bay": 2})], "Stored by hand.")
    env = open_env(serve({"train": [dock_task(solution=script("store", jammed))]}).url)
    environment = env.factory()
    environment.reset(**env.dataset[0])
    with pytest.raises(Exception) as raised:  # what TRL catches: any exception
        environment.jam_crane(crate="C1")
    environment.get_reward()

    (row,) = env.demonstrations().to_list()

    assert row["messages"][3] == answer("jam_crane", str({"error": str(raised.value)}))
    assert "the crane is jammed with C1 half lifted" in row["messages"][3]["content"]


def test_a_two_turn_play_gets_the_next_turns_prompt_as_its_first_end_turns_answer(
    serve: Serve, open_env: Open
) -> None:
    task = dock_task(
        turns=("Store C1.", "Now list the crates."),
        solution=script("store", STORE_C1, ([("list_crates", {})], "C1 is in bay 2.")),
    )
    env = open_env(serve({"train": [task]}).url)

    (row,) = env.demonstrations().to_list()

    assert row["messages"][5] == answer("end_turn", "Now list the crates.")
    assert row["messages"][-2:] == [answer("end_turn", TASK_OVER), {"role": "assistant", "content": ""}]


def test_only_the_tasks_with_a_solution_have_a_row_each_naming_its_split_index_and_id(
    serve: Serve, open_env: Open
) -> None:
    tasks = [dock_task("a"), dock_task("b", solution=script("b", STORE_C1)), dock_task("c")]
    env = open_env(serve({"train": tasks}).url)

    rows = env.demonstrations().to_list()

    assert [(row["split"], row["index"], row["id"]) for row in rows] == [("train", 1, "b")]


def test_a_play_that_no_longer_scores_its_expected_score_is_left_out_with_one_warning_naming_it(
    serve: Serve, open_env: Open
) -> None:
    tasks = [
        dock_task("stored", solution=script("stored", STORE_C1)),
        dock_task("idle", solution=script("idle", ([], "Done."))),
        dock_task("half", solution=script("half", STORE_C1, expected=0.5)),
    ]
    env = open_env(serve({"train": tasks}).url)

    with pytest.warns(DemonstrationWarning) as warned:
        rows = env.demonstrations().to_list()

    assert [row["id"] for row in rows] == ["stored"]
    assert len(warned) == 1
    message = str(warned[0].message)
    assert (
        "2 of 3 reference plays of split 'train' no longer score what solutions/train.jsonl expects"
        in message
    )
    assert "idle (train/1): scored 0, expected 1" in message
    assert "half (train/2): scored 1, expected 0.5" in message
    assert "pass strict=True to make this an error" in message


def test_a_play_whose_episode_fails_is_reported_with_why(serve: Serve, open_env: Open) -> None:
    broken = dock_task(
        "broken", deploy_error=RuntimeError("the quay is flooded"), solution=script("broken", STORE_C1)
    )
    env = open_env(serve({"train": [broken, dock_task("fine", solution=script("fine", STORE_C1))]}).url)

    with pytest.warns(DemonstrationWarning, match=r"broken \(train/0\): failed: \w+: .*the quay is flooded"):
        rows = env.demonstrations().to_list()

    assert [row["id"] for row in rows] == ["fine"]


def test_strict_demonstrations_raise_listing_each_failed_play_instead_of_leaving_it_out(
    serve: Serve, open_env: Open
) -> None:
    tasks = [
        dock_task("idle", solution=script("idle", ([], "Done."))),
        dock_task("a", solution=script("a", STORE_C1)),
    ]
    env = open_env(serve({"train": tasks}).url)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DemonstrationError, match=r"1 of 2 reference plays") as raised:
            env.demonstrations(strict=True)

    assert raised.value.failures == ("idle (train/0): scored 0, expected 1",)


def test_a_split_without_solutions_is_an_error_saying_how_to_add_its_solutions_file(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()], "eval": [dock_task("e")]}).url)

    with pytest.raises(DemonstrationError) as raised:
        env.demonstrations("eval")

    assert str(raised.value).startswith(
        f"split 'eval' on {env.url} has no reference plays: add solutions/eval.jsonl to its bundle"
    )
    assert "`agent-env replay BUNDLE --split eval`" in str(raised.value)


def test_an_unknown_split_is_the_error_dataset_for_gives(serve: Serve, open_env: Open) -> None:
    env = open_env(serve({"train": [dock_task(solution=script("store", STORE_C1))]}).url)

    with pytest.raises(UnknownSplitError) as from_dataset:
        env.dataset_for("holdout")
    with pytest.raises(UnknownSplitError) as from_demonstrations:
        env.demonstrations("holdout")

    assert str(from_demonstrations.value) == str(from_dataset.value)


def test_demonstrations_play_every_episode_to_its_teardown_and_hold_no_session(
    serve: Serve, open_env: Open
) -> None:
    tasks = [
        FakeTask(f"t{n}", tools=[add_crate, jam_crane], solution=script(f"t{n}", STORE_C1)) for n in range(5)
    ]
    server = serve({"train": tasks})
    env = open_env(server.url)

    env.demonstrations()

    assert all(task.wait_all_torn_down() for task in tasks)
    assert [len(task.episodes) for task in tasks] == [1] * 5
    assert until(lambda: httpx.get(f"{server.url}/tasks/status").json()["connections"] == 0)
