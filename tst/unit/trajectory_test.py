"""A trajectory, the record of one episode: one JSON line that reads back equal, its steps, and the
published JSON Schema kept equal to the model's."""

from __future__ import annotations

import json
from pathlib import Path

from agent_env import Trajectory
from agent_env.testing import FakeTask
from tst.support.tools import add_crate
from tst.support.trajectories import played

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "trajectory.schema.json"


def test_a_trajectory_is_one_json_line_that_reads_back_equal() -> None:
    trajectory = played(FakeTask("once", tools=[add_crate]), ("end", "done"))

    line = trajectory.model_dump_json()

    assert "\n" not in line
    assert Trajectory.model_validate_json(line) == trajectory
    assert json.loads(line)["schema_version"] == 1


def test_a_servers_trajectory_knows_no_steps_and_is_written_without_them_as_before() -> None:
    trajectory = played(
        FakeTask("twice", tools=[add_crate]),
        ("call", "add_crate", {"crate": "C1", "bay": 2}),
        ("call", "add_crate", {"crate": "C2", "bay": 3}),
        ("end", "done"),
    )

    written = json.loads(trajectory.model_dump_json())

    assert [call.step for call in trajectory.turns[0].calls] == [None, None]
    assert [sorted(call) for call in written["turns"][0]["calls"]] == [
        ["arguments", "error", "error_code", "result", "seconds", "tool"]
    ] * 2
    assert [[call.tool for call in step] for step in trajectory.turns[0].steps] == [
        ["add_crate"],
        ["add_crate"],
    ]


def test_a_call_s_step_is_written_when_known_and_the_calls_of_one_step_read_back_together() -> None:
    line = {
        "recorded_by": "eval",
        "task": {"split": "train", "index": 0, "id": "t", "toolset": "dock"},
        "outcome": {"kind": "scored"},
        "turns": [
            {
                "turn": 1,
                "prompt": "Store two.",
                "calls": [
                    {"tool": "list_crates", "step": 1},
                    {"tool": "a", "step": 2},
                    {"tool": "b", "step": 2},
                ],
            }
        ],
    }

    trajectory = Trajectory.model_validate_json(json.dumps(line))

    assert [[call.tool for call in step] for step in trajectory.turns[0].steps] == [
        ["list_crates"],
        ["a", "b"],
    ]
    assert [call["step"] for call in json.loads(trajectory.model_dump_json())["turns"][0]["calls"]] == [
        1,
        2,
        2,
    ]
    assert trajectory.schema_version == 1


def test_the_published_json_schema_is_the_trajectory_model_s() -> None:
    published = json.loads(SCHEMA_FILE.read_text())

    assert published == Trajectory.model_json_schema(), (
        "docs/trajectory.schema.json is stale: regenerate it with `make trajectory-schema`"
    )
