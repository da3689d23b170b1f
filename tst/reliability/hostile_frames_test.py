"""Hostile WebSocket frames: each is refused with an error that says what was wrong, and the session,
its episode included, goes on; a frame too big to take ends only its own connection.

The frames go raw over the socket, as any client (not only OpenEnv's) could send them, mid-episode:
after each, the same session plays its task on to a score.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosedError

from agent_env._episode import EpisodeState
from agent_env._error_types import ErrorCode
from agent_env._trajectory_reader import read_trajectories
from agent_env._trajectory_recorder import Redaction, TrajectoryRecorder
from agent_env.openenv import BackgroundServer, build_served_app
from agent_env.testing import FakeTask, Gate, calls, fake_served
from tst.reliability._raw import ANSWER_S, Raw, dock, observation, play_on, status
from tst.support.waiting import until

NESTED = 100_000


@pytest.fixture
def server() -> Iterator[tuple[BackgroundServer, list[FakeTask]]]:
    tasks = [dock("quay"), dock("belt")]
    served = BackgroundServer(build_served_app(fake_served({"train": tasks}))).start()
    yield served, tasks
    served.stop()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


FRAMES: dict[str, tuple[str | bytes, str, str]] = {
    "not JSON": ("{crate: C1", "INVALID_JSON", "Invalid JSON"),
    "an unknown type": ('{"type": "dance", "data": {}}', "UNKNOWN_TYPE", "Unknown message type: dance"),
    "an array": ("[1, 2]", "UNKNOWN_TYPE", "must be a JSON object"),
    "a string": ('"reset"', "UNKNOWN_TYPE", "must be a JSON object"),
    "null": ("null", "UNKNOWN_TYPE", "must be a JSON object"),
    "a binary frame": (b"\x00\x01\x02", "UNKNOWN_TYPE", "binary frames are not accepted"),
    "nesting past the parser": (nested(NESTED), "UNKNOWN_TYPE", "nests deeper than the server parses"),
    "arguments nested past the parser": (
        '{"type": "step", "data": {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": '
        + nested(NESTED)
        + ', "bay": 2}}}',
        "UNKNOWN_TYPE",
        "nests deeper than the server parses",
    ),
    "a step without data": ('{"type": "step"}', "VALIDATION_ERROR", "Invalid message"),
    "a step whose data is a list": ('{"type": "step", "data": [1]}', "VALIDATION_ERROR", "Invalid message"),
}


@pytest.mark.parametrize("name", list(FRAMES))
def test_a_hostile_frame_mid_episode_is_refused_saying_why_and_the_episode_plays_on_to_its_score(
    server: tuple[BackgroundServer, list[FakeTask]], name: str
) -> None:
    served, tasks = server
    frame, code, says = FRAMES[name]
    raw = Raw(served.url)
    started = observation(raw.ask("reset", {"split": "train", "index": 0}))

    raw.send(frame)
    refused = raw.answer()
    scored = play_on(raw)
    raw.close()

    assert started["observation"]["task_id"] == "quay"
    assert refused["type"] == "error" and refused["data"]["code"] == code, refused
    assert says in refused["data"]["message"]
    assert (scored["done"], scored["reward"]) == (True, 1.0)
    assert until(lambda: status(served)["live_episodes"] == 0 and status(served)["connections"] == 0)
    assert [len(task.episodes) for task in tasks] == [1, 0]


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"crate": "C1", "bay": "two"}, "INVALID_ARGUMENTS"),
        ({"crate": "C1"}, "INVALID_ARGUMENTS"),
        ({"crate": "C1", "bay": 2, "deck": 3}, "INVALID_ARGUMENTS"),
        ({"crate": nested(200), "bay": 2}, "INVALID_ARGUMENTS"),
        ({"crate": {"label": [["C1"]]}, "bay": 2}, "INVALID_ARGUMENTS"),
    ],
    ids=["wrong-typed", "missing", "extra", "deep-but-parsable", "an-object-for-a-string"],
)
def test_bad_arguments_are_refused_naming_the_problem_and_the_turn_stays_open(
    server: tuple[BackgroundServer, list[FakeTask]], arguments: dict[str, Any], code: str
) -> None:
    served, _ = server
    raw = Raw(served.url)
    observation(raw.ask("reset", {"split": "train", "index": 0}))
    if isinstance(arguments.get("crate"), str) and arguments["crate"].startswith("["):
        arguments = {**arguments, "crate": json.loads(arguments["crate"])}

    refused = observation(raw.ask("step", {"kind": "call_tool", "tool": "add_crate", "arguments": arguments}))
    scored = play_on(raw)
    raw.close()

    assert refused["observation"]["error"]["code"] == code, refused
    assert refused["done"] is False
    assert (scored["done"], scored["reward"]) == (True, 1.0)


def test_unicode_arguments_reach_the_tool_and_come_back_as_they_were(
    server: tuple[BackgroundServer, list[FakeTask]],
) -> None:
    served, tasks = server
    raw = Raw(served.url)
    observation(raw.ask("reset", {"split": "train", "index": 0}))
    label = "Çrate-é-😀-\u202e-漢字"

    called = observation(
        raw.ask("step", {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": label, "bay": 2}})
    )
    raw.close()

    assert called["observation"]["result"] == f"stored dry crate {label} in bay 2"
    assert calls(tasks[0].episodes[0]) == [("add_crate", {"crate": label, "bay": 2})]


NOT_UNICODE: dict[str, tuple[str, dict[str, Any], str]] = {
    "a reset's split": ("reset", {"split": "train\ud800", "index": 0}, "BAD_REQUEST"),
    "a reset's client label": (
        "reset",
        {"split": "train", "index": 0, "client": "run-\udfff"},
        "BAD_REQUEST",
    ),
    "a tool's name": (
        "step",
        {"kind": "call_tool", "tool": "add_crate\ud800", "arguments": {}},
        "BAD_REQUEST",
    ),
    "a tool's argument": (
        "step",
        {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": "C17\ud800", "bay": 2}},
        "INVALID_ARGUMENTS",
    ),
    "a key inside an argument": (
        "step",
        {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": {"\udc00": "C1"}, "bay": 2}},
        "INVALID_ARGUMENTS",
    ),
    "an end_turn's reply": ("step", {"kind": "end_turn", "reply": "Stored\ud800"}, "BAD_REQUEST"),
}


@pytest.mark.parametrize("name", list(NOT_UNICODE))
def test_a_lone_surrogate_anywhere_in_a_frame_is_refused_with_a_documented_code_and_the_episode_is_recorded(
    tmp_path: Path, name: str
) -> None:
    kind, data, code = NOT_UNICODE[name]
    recorder = TrajectoryRecorder(tmp_path, redaction=Redaction.of(values=["tok-9f3e1c"]))
    tasks = [dock("quay")]
    served = BackgroundServer(build_served_app(fake_served({"train": tasks}), recorder=recorder)).start()
    try:
        raw = Raw(served.url)
        observation(raw.ask("reset", {"split": "train", "index": 0}))
        refused = raw.ask(kind, data)  # json.dumps sends each lone surrogate escaped: valid JSON
        scored = play_on(raw)
        raw.close()
        assert until(lambda: recorder.written == 1, ANSWER_S)
    finally:
        served.stop()

    error = observation(refused)["observation"]["error"]
    assert error["code"] == code and error["code"] in set(ErrorCode), refused
    assert "not valid Unicode" in error["message"]
    assert (scored["done"], scored["reward"]) == (True, 1.0)
    (trajectory,) = read_trajectories(tmp_path)
    *refused_calls, stored = trajectory.turns[0].calls
    assert [(c.error_code, c.result) for c in refused_calls] == [(code, None)] * len(refused_calls)
    assert stored.arguments == {"crate": "C1", "bay": 2} and stored.result == "stored dry crate C1 in bay 2"
    assert trajectory.score == 1.0 and recorder.dropped == 0


def test_a_frame_too_big_to_take_ends_only_its_connection_and_its_episode_is_torn_down(
    server: tuple[BackgroundServer, list[FakeTask]],
) -> None:
    served, tasks = server
    raw, other = Raw(served.url), Raw(served.url)
    observation(raw.ask("reset", {"split": "train", "index": 0}))
    observation(other.ask("reset", {"split": "train", "index": 1}))

    raw.send("x" * (17 * 2**20))
    with pytest.raises(ConnectionClosedError) as closed:
        raw.answer()
    scored = play_on(other)
    other.close()

    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # "message too big"
    assert (scored["done"], scored["reward"]) == (True, 1.0)
    assert until(lambda: status(served)["live_episodes"] == 0)
    assert all(e.state is EpisodeState.TORN_DOWN for task in tasks for e in task.episodes)


def test_a_reset_for_another_task_sent_while_a_call_is_in_flight_waits_for_it_then_starts_that_task(
    server: tuple[BackgroundServer, list[FakeTask]],
) -> None:
    served, tasks = server
    lifting = Gate()
    tasks[0].tool_gates = {"add_crate": lifting}
    raw = Raw(served.url)
    observation(raw.ask("reset", {"split": "train", "index": 0}))

    raw.send(
        json.dumps(
            {
                "type": "step",
                "data": {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": "C1", "bay": 2}},
            }
        )
    )
    assert lifting.wait_reached(ANSWER_S)
    raw.send(json.dumps({"type": "reset", "data": {"split": "train", "index": 1}}))
    threading.Timer(0.2, lifting.release).start()
    called = observation(raw.answer())
    restarted = observation(raw.answer())
    scored = play_on(raw)
    raw.close()

    assert called["observation"]["result"] == "stored dry crate C1 in bay 2"
    assert restarted["observation"]["task_id"] == "belt"
    assert (scored["done"], scored["reward"]) == (True, 1.0)
    assert tasks[0].episodes[0].state is EpisodeState.TORN_DOWN and tasks[0].episodes[0].score is None
    assert until(lambda: status(served)["live_episodes"] == 0)


def test_frames_sent_before_any_reset_are_refused_and_the_session_then_plays(
    server: tuple[BackgroundServer, list[FakeTask]],
) -> None:
    served, _ = server
    raw = Raw(served.url)

    early = observation(
        raw.ask("step", {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": "C1", "bay": 2}})
    )
    raw.send("[]")
    refused = raw.answer()
    observation(raw.ask("reset", {"split": "train", "index": 0}))
    scored = play_on(raw)
    raw.close()

    assert early["observation"]["error"]["code"] == "NO_EPISODE"
    assert refused["data"]["code"] == "UNKNOWN_TYPE"
    assert scored["reward"] == 1.0
