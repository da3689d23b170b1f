"""Episodes over the WebSocket: the example bundle's tasks played to their score, and every bad request.

A session plays the wharf's tasks from their reference plays and gets the score its verifiers give;
a request the server cannot carry out is answered with an error code and what to do, and the session
goes on: the next good call on it works.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_env.openenv import AgentEnvAction, build_app
from agent_env.sandbox import LocalSandboxProvider
from agent_env.testing import FakeTask, calls
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate, jam_crane
from tst.support.waiting import until
from tst.support.wharf import (
    ACCESS_TASK,
    BASH_TASK,
    SINGLE_TURN_TASK,
    TWO_TURN_TASK,
    WHARF,
    play_reference,
    sandbox_folders,
)

pytestmark = pytest.mark.needs("openenv_installed")

CLIENT_TIMEOUT_S = 10.0
WAIT_S = 10.0
"""How long a sandbox may take to go once its episode ends (`until`'s own bound is shorter)."""
DECKHAND = (
    "You are a deckhand on the harbor's dock. Use your tools to do what you are asked, then answer briefly."
)
DOCK_TOOLS = ["add_crate", "move_crate", "list_crates"]


def tool_names(tools: list[dict[str, Any]]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def wharf(serve: Serve, connect: Connect, sandboxes: Path) -> Any:
    """A client of a fresh server of the wharf bundle whose sandbox folders go under `sandboxes`."""
    server = serve(build_app(WHARF, sandbox=LocalSandboxProvider(sandboxes)))
    return connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)


def test_a_single_turn_task_played_from_its_reference_play_scores_one(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)

    started = client.reset(split="train", index=SINGLE_TURN_TASK, timeout_s=30)
    answers = play_reference(client, "store-crate-000")

    opening = started.observation
    assert (opening["task_id"], opening["split"], opening["index"]) == ("store-crate-000", "train", 0)
    assert (opening["turn"], opening["turns"], opening["error"]) == (1, 1, None)
    assert opening["prompt"] == [
        {"role": "system", "content": DECKHAND},
        {"role": "user", "content": "Crate C17 has come ashore; it holds dry goods. Store it in bay 5."},
    ]
    assert tool_names(opening["tools"]) == DOCK_TOOLS
    assert started.done is False and started.reward is None
    stored, scored = answers
    assert stored.observation["result"] == "crate C17 (dry) stored in bay 5"
    assert stored.observation["error"] is None and stored.done is False
    assert (scored.done, scored.reward) == (True, 1.0)
    assert scored.observation["verifier_scores"] == [1.0]
    assert scored.observation["turn"] is None and scored.observation["error"] is None
    assert until(lambda: sandbox_folders(tmp_path) == [], WAIT_S)


def test_a_two_turn_task_hands_over_its_second_prompt_at_the_first_end_turn_and_scores_one(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)

    started = client.reset(split="train", index=TWO_TURN_TASK, timeout_s=30)
    stored, first_end, moved, scored = play_reference(client, "store-then-move-000")

    assert started.observation["task_id"] == "store-then-move-000"
    assert started.observation["prompt"] == [
        {"role": "system", "content": DECKHAND},
        {"role": "user", "content": "A dry crate labelled C16 is on the quay. Store it in bay 2."},
    ]
    assert (started.observation["turn"], started.observation["turns"]) == (1, 2)
    assert stored.observation["result"] == "crate C16 (dry) stored in bay 2"
    assert first_end.observation["prompt"] == [
        {"role": "user", "content": "Change of plan: move the crate you just stored to bay 6."}
    ]
    assert first_end.observation["turn"] == 2 and first_end.observation["error"] is None
    assert first_end.done is False and first_end.reward is None
    assert moved.observation["result"] == "crate C16 moved to bay 6"
    assert (scored.done, scored.reward) == (True, 1.0)
    assert scored.observation["verifier_scores"] == [1.0]
    assert until(lambda: sandbox_folders(tmp_path) == [], WAIT_S)


def test_a_bash_task_is_played_through_bash_in_its_own_sandbox_scores_one_and_leaves_no_sandbox(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)

    started = client.reset(split="train", index=BASH_TASK, timeout_s=30)
    folders_while_playing = sandbox_folders(tmp_path)
    listed = client.step(AgentEnvAction.call_tool("bash", {"command": "ls"}).wire())
    *calls, scored = play_reference(client, "manifest-total-000")

    assert started.observation["task_id"] == "manifest-total-000"
    assert started.observation["prompt"][1] == {
        "role": "user",
        "content": "manifest.csv lists today's crates and their weights. "
        "Write their total weight, as a bare number, to total.txt.",
    }
    assert tool_names(started.observation["tools"]) == [*DOCK_TOOLS, "bash"]
    assert len(folders_while_playing) == 1
    assert listed.observation["result"] == "manifest.csv\n\n[exit code: 0]"
    assert [call.observation["error"] for call in calls] == [None]
    assert calls[0].observation["result"].endswith("[exit code: 0]")
    assert (scored.done, scored.reward) == (True, 1.0)
    assert scored.observation["verifier_scores"] == [1.0]
    assert until(lambda: sandbox_folders(tmp_path) == [], WAIT_S)


@pytest.mark.parametrize(
    ("index", "turns"),
    [(SINGLE_TURN_TASK, 1), (TWO_TURN_TASK, 2), (BASH_TASK, 1)],
    ids=["single-turn", "two-turn", "bash"],
)
def test_ending_every_turn_at_once_with_an_empty_reply_scores_zero(
    serve: Serve, connect: Connect, tmp_path: Path, index: int, turns: int
) -> None:
    client = wharf(serve, connect, tmp_path)
    client.reset(split="train", index=index, timeout_s=30)

    answers = [client.step(AgentEnvAction.end_turn("").wire()) for _ in range(turns)]

    assert [answer.done for answer in answers] == [False] * (turns - 1) + [True]
    assert answers[-1].reward == 0.0
    assert answers[-1].observation["verifier_scores"] == [0.0]
    assert answers[-1].observation["error"] is None
    assert until(lambda: sandbox_folders(tmp_path) == [], WAIT_S)


@pytest.mark.parametrize("index", [SINGLE_TURN_TASK, BASH_TASK], ids=["dock", "dock+bash"])
def test_list_tools_answers_with_the_same_schemas_as_reset(
    serve: Serve, connect: Connect, tmp_path: Path, index: int
) -> None:
    client = wharf(serve, connect, tmp_path)
    started = client.reset(split="train", index=index)

    listed = client.step(AgentEnvAction.list_tools().wire())

    assert listed.observation["tools"] == started.observation["tools"]
    assert listed.observation["error"] is None and listed.done is False
    assert listed.observation["turn"] == 1


def test_the_state_of_a_session_says_its_task_its_turn_and_its_phase(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)
    states = [client.state()]
    client.reset(split="train", index=TWO_TURN_TASK)
    states.append(client.state())
    *_, scored = play_reference(client, "store-then-move-000")
    states.append(client.state())

    seen = [(state["task_id"], state["turn"], state["phase"]) for state in states]

    assert seen == [
        (None, None, "idle"),
        ("store-then-move-000", 1, "turn_open"),
        ("store-then-move-000", None, "ended"),
    ]
    assert (states[1]["split"], states[1]["index"]) == ("train", TWO_TURN_TASK)
    assert scored.reward == 1.0


def test_the_state_after_the_first_end_turn_of_a_two_turn_task_says_its_second_turn_is_open(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)
    client.reset(split="train", index=TWO_TURN_TASK)
    client.step(AgentEnvAction.end_turn("").wire())

    state = client.state()

    assert (state["task_id"], state["turn"], state["phase"]) == ("store-then-move-000", 2, "turn_open")


def test_a_step_before_any_reset_is_refused_with_no_episode_and_the_session_then_plays(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)

    early = client.step(AgentEnvAction.call_tool("add_crate", {"crate": "C17", "bay": 5}).wire())
    started = client.reset(split="train", index=SINGLE_TURN_TASK)
    *_, scored = play_reference(client, "store-crate-000")

    error = early.observation["error"]
    assert error["code"] == "NO_EPISODE"
    assert error["call"] == "call_tool add_crate"
    assert "reset(split=..., index=...) first" in error["message"]
    assert early.done is False
    assert started.observation["error"] is None
    assert scored.reward == 1.0


@pytest.mark.parametrize(
    ("arguments", "code", "told"),
    [
        (
            {"split": "dev", "index": 0},
            "UNKNOWN_SPLIT",
            "unknown split 'dev' (splits: eval (11 tasks), train",
        ),
        ({"split": "train", "index": 33}, "INDEX_OUT_OF_RANGE", "index 33 is out of range for split 'train'"),
        ({"split": "train", "index": -1}, "INDEX_OUT_OF_RANGE", "(33 tasks: 0..32)"),
        ({"split": "train"}, "BAD_REQUEST", "reset: argument 'index' is required"),
        (
            {"split": "train", "index": "0"},
            "BAD_REQUEST",
            "argument 'index': Input should be a valid integer (got \"0\")",
        ),
        (
            {"split": "train", "index": 0, "level": 3},
            "BAD_REQUEST",
            "argument 'level' is unknown; remove it or check its spelling",
        ),
        ({"split": "train", "index": 0, "seed": 7}, "BAD_REQUEST", "seed is not taken"),
    ],
    ids=[
        "unknown-split",
        "index-past-the-end",
        "negative-index",
        "no-index",
        "index-a-string",
        "unknown",
        "seed",
    ],
)
def test_a_bad_reset_is_refused_with_its_code_and_what_to_do_and_the_next_reset_plays(
    serve: Serve, connect: Connect, tmp_path: Path, arguments: dict[str, Any], code: str, told: str
) -> None:
    client = wharf(serve, connect, tmp_path)

    refused = client.reset(**arguments)
    started = client.reset(split="train", index=SINGLE_TURN_TASK)
    *_, scored = play_reference(client, "store-crate-000")

    error = refused.observation["error"]
    assert error["code"] == code
    assert told in error["message"]
    assert refused.done is False and refused.observation["task_id"] is None
    assert started.observation["error"] is None and started.observation["task_id"] == "store-crate-000"
    assert scored.reward == 1.0


def test_a_bad_reset_during_an_episode_leaves_that_episode_open_and_playable(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)
    client.reset(split="train", index=SINGLE_TURN_TASK)

    refused = client.reset(split="train", index=99)
    state = client.state()
    *_, scored = play_reference(client, "store-crate-000")

    assert refused.observation["error"]["code"] == "INDEX_OUT_OF_RANGE"
    assert (state["task_id"], state["phase"]) == ("store-crate-000", "turn_open")
    assert scored.reward == 1.0


@pytest.mark.parametrize(
    ("action", "code", "call", "told"),
    [
        (
            AgentEnvAction.call_tool("crane", {"crate": "C17"}),
            "UNKNOWN_TOOL",
            "call_tool crane",
            "unknown tool 'crane' (tools: add_crate, move_crate, list_crates)",
        ),
        (
            AgentEnvAction.call_tool("add_crate", {"crate": 17, "bay": 5}),
            "INVALID_ARGUMENTS",
            "call_tool add_crate",
            "add_crate: argument 'crate': Input should be a valid string (got 17)",
        ),
        (
            AgentEnvAction.call_tool("add_crate", {"crate": "C17"}),
            "INVALID_ARGUMENTS",
            "call_tool add_crate",
            "add_crate: argument 'bay' is required",
        ),
        (
            AgentEnvAction.call_tool("add_crate", {"crate": "C17", "bay": 5, "colour": "red"}),
            "INVALID_ARGUMENTS",
            "call_tool add_crate",
            "add_crate: argument 'colour' is unknown (arguments: crate, bay, kind)",
        ),
        (
            AgentEnvAction.call_tool("add_crate", {"crate": "C17", "bay": 9}),
            "INVALID_ARGUMENTS",
            "call_tool add_crate",
            "add_crate: argument 'bay': Input should be less than or equal to 6 (got 9)",
        ),
        (
            AgentEnvAction.call_tool("move_crate", {"crate": "C99", "to_bay": 1}),
            "TOOL_ERROR",
            "call_tool move_crate",
            "move_crate failed: ValueError: there is no crate C99 on the dock",
        ),
        (
            AgentEnvAction.call_tool("remove_crate", {"crate": "C29"}),
            "TOOL_NOT_ALLOWED",
            "call_tool remove_crate",
            "tool 'remove_crate' is not available to role 'default' in task 'store-crate-000'",
        ),
        (
            AgentEnvAction(kind="call_tool", arguments={"crate": "C17"}),
            "BAD_REQUEST",
            "call_tool",
            "call_tool needs the name of a tool in `tool`",
        ),
        (
            AgentEnvAction(kind="end_turn", tool="add_crate", reply="Stored."),
            "BAD_REQUEST",
            "end_turn",
            "end_turn does not take tool",
        ),
        (
            AgentEnvAction(kind="list_tools", reply="Stored."),
            "BAD_REQUEST",
            "list_tools",
            "list_tools does not take reply",
        ),
    ],
    ids=[
        "unknown-tool",
        "wrong-type",
        "missing-argument",
        "extra-argument",
        "out-of-range",
        "tool-raises",
        "not-the-roles",
        "call-without-tool",
        "end-turn-with-tool",
        "list-tools-with-reply",
    ],
)
def test_a_bad_step_is_answered_with_its_code_and_what_to_do_and_the_turn_stays_open_to_score_one(
    serve: Serve, connect: Connect, tmp_path: Path, action: AgentEnvAction, code: str, call: str, told: str
) -> None:
    client = wharf(serve, connect, tmp_path)
    client.reset(split="train", index=SINGLE_TURN_TASK)

    refused = client.step(action.wire())
    state = client.state()
    *_, scored = play_reference(client, "store-crate-000")

    error = refused.observation["error"]
    assert error["code"] == code
    assert told in error["message"]
    assert error["call"] == call
    assert refused.done is False and refused.reward is None
    assert (state["turn"], state["phase"]) == (1, "turn_open")
    assert scored.reward == 1.0


def test_a_tool_that_raises_is_a_tool_error_with_the_tools_own_message_and_the_turn_goes_on(
    serve: Serve, connect: Connect
) -> None:
    task = FakeTask("jammed", tools=[add_crate, jam_crane])
    client = connect(serve({"train": [task]}).url, message_timeout_s=CLIENT_TIMEOUT_S)
    client.reset(split="train", index=0)

    jammed = client.step(AgentEnvAction.call_tool("jam_crane", {"crate": "C1"}).wire())
    stored = client.step(AgentEnvAction.call_tool("add_crate", {"crate": "C1", "bay": 2}).wire())
    scored = client.step(AgentEnvAction.end_turn("Stored.").wire())

    error = jammed.observation["error"]
    assert error["code"] == "TOOL_ERROR"
    assert error["call"] == "call_tool jam_crane"
    assert "the crane is jammed with C1 half lifted" in error["message"]
    assert jammed.done is False and jammed.observation["task_id"] == "jammed"
    assert stored.observation["result"] == "stored dry crate C1 in bay 2"
    assert (scored.done, scored.reward) == (True, 1.0)
    assert calls(task.episodes[0]) == [
        ("jam_crane", {"crate": "C1"}),
        ("add_crate", {"crate": "C1", "bay": 2}),
    ]


def test_remove_crate_belongs_to_the_harbormaster_and_a_deckhand_calls_it_only_where_its_task_enables_it(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)
    client.reset(split="train", index=SINGLE_TURN_TASK)

    refused = client.step(AgentEnvAction.call_tool("remove_crate", {"crate": "C29"}).wire())
    enabled = client.reset(split="train", index=ACCESS_TASK)
    shipped, scored = play_reference(client, "ship-crate-000")

    assert refused.observation["error"]["code"] == "TOOL_NOT_ALLOWED"
    assert "(tools: add_crate, move_crate, list_crates)" in refused.observation["error"]["message"]
    assert "remove_crate" in tool_names(enabled.observation["tools"])
    assert shipped.observation["result"] == "crate C89 shipped"
    assert (scored.done, scored.reward) == (True, 1.0)


def test_a_step_after_the_episode_was_scored_has_no_open_turn_and_the_session_plays_the_next_task(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    client = wharf(serve, connect, tmp_path)
    client.reset(split="train", index=SINGLE_TURN_TASK)
    play_reference(client, "store-crate-000")

    late = client.step(AgentEnvAction.call_tool("list_crates").wire())
    late_end = client.step(AgentEnvAction.end_turn("Again.").wire())
    client.reset(split="train", index=TWO_TURN_TASK)
    *_, scored = play_reference(client, "store-then-move-000")

    for answer, call in ((late, "call_tool list_crates"), (late_end, "end_turn")):
        error = answer.observation["error"]
        assert error["code"] == "NO_OPEN_TURN"
        assert error["call"] == call
        assert (
            "the episode of task 'store-crate-000' ended (scored 1); reset to play another"
            in error["message"]
        )
        assert answer.done is False and answer.reward is None
    assert scored.reward == 1.0


@pytest.mark.parametrize(
    "malformed",
    [
        {"kind": "dance"},
        {"tool": "add_crate", "arguments": {"crate": "C17", "bay": 5}},
        {"kind": "call_tool", "tool": "add_crate", "arguments": ["C17", 5]},
        {"kind": "end_turn", "reply": "Stored.", "mood": "cheerful"},
    ],
    ids=["unknown-kind", "no-kind", "arguments-a-list", "unknown-field"],
)
def test_a_malformed_action_fails_openenvs_own_validation_and_the_session_goes_on(
    serve: Serve, connect: Connect, tmp_path: Path, malformed: dict[str, Any]
) -> None:
    client = wharf(serve, connect, tmp_path)
    client.reset(split="train", index=SINGLE_TURN_TASK)

    with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
        client.step(malformed)
    *_, scored = play_reference(client, "store-crate-000")

    assert (scored.done, scored.reward) == (True, 1.0)
