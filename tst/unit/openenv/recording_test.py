"""A recording server writes each episode's trajectory once, when it is torn down, with its client's label.

Played the way a trainer plays: `AgentEnv` and its factory's instances against a real server on
loopback; the trajectories are then read back from the folder as a user would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_env import TrajectoryRecorder, read_trajectories
from agent_env._trajectory_recorder import Redaction
from agent_env.openenv import build_app, build_served_app
from agent_env.testing import FakeTask, fake_served
from agent_env.training.trl import AgentEnv
from tst.support.bundles import TOML, make_bundle
from tst.support.metrics import scrape
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate
from tst.support.waiting import until
from tst.support.wharf import SINGLE_TURN_TASK, WHARF

pytestmark = pytest.mark.needs("openenv_installed", "trl_installed")

TOKEN = "tok-9f3e1c"


def _play(env: AgentEnv, index: int, *calls: dict[str, object]) -> float | None:
    row = dict(env.dataset[index])
    instance = env.factory[row.pop("environment")]() if isinstance(env.factory, dict) else env.factory()
    instance.reset(**row)
    for arguments in calls:
        instance.add_crate(**arguments)
    instance.end_turn("Done.")
    reward: float | None = instance.get_reward()
    return reward


def test_every_episode_a_trainer_plays_is_recorded_once_with_its_calls_and_its_label(tmp_path: Path) -> None:
    tasks = [FakeTask("store", tools=[add_crate]), FakeTask("store-again", tools=[add_crate], score=0.0)]
    app = build_served_app(fake_served({"train": tasks}), recorder=TrajectoryRecorder(tmp_path))

    with AgentEnv.serving(app, label="run-7") as env:
        rewards = [_play(env, 0, {"crate": "C1", "bay": 2}), _play(env, 1), _play(env, 0)]

    recorded = sorted(read_trajectories(tmp_path), key=lambda t: t.started_at or 0)
    assert rewards == [1.0, 0.0, 1.0]
    assert [(t.task.id, t.score, t.outcome.kind, t.client) for t in recorded] == [
        ("store", 1.0, "scored", "run-7"),
        ("store-again", 0.0, "scored", "run-7"),
        ("store", 1.0, "scored", "run-7"),
    ]
    first = recorded[0]
    assert [(c.tool, c.arguments) for c in first.turns[0].calls] == [("add_crate", {"crate": "C1", "bay": 2})]
    assert first.turns[0].reply == "Done." and first.timings.teardown_s is not None


def test_a_bundle_served_with_record_redacts_its_secret_keys_and_the_token(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "bundle", toml=TOML + '\n[record]\nredact_keys = ["title"]\n')
    folder = tmp_path / "trajectories"
    app = build_app(bundle, record=folder, token="tok-9f3e1c")

    with AgentEnv.serving(app, token="tok-9f3e1c") as env:
        row = dict(env.dataset[0])
        instance = env.factory()
        instance.reset(**row)
        instance.put_book(title="Dune")
        instance.end_turn("Shelved Dune; the token was tok-9f3e1c.")
        assert instance.get_reward() == 1.0

    (trajectory,) = read_trajectories(folder)
    assert trajectory.turns[0].calls[0].arguments == {"title": "[redacted]"}
    assert trajectory.turns[0].reply == "Shelved Dune; the token was [redacted]."
    assert "tok-9f3e1c" not in "".join(p.read_text() for p in folder.iterdir())


def test_a_reset_s_client_label_must_be_a_short_string(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="label must be 1 to 200 characters"):
        AgentEnv("http://127.0.0.1:9", label="x" * 201)


def test_agent_env_local_with_record_writes_the_example_bundle_s_episodes(tmp_path: Path) -> None:
    with AgentEnv.local(WHARF, record=tmp_path) as env:
        row = dict(env.dataset[SINGLE_TURN_TASK])
        instance = env.factory[row.pop("environment")]()
        instance.reset(**row)
        instance.end_turn("I did nothing.")
        assert instance.get_reward() == 0.0

    lines = [line for path in sorted(tmp_path.iterdir()) for line in path.read_text().splitlines()]
    assert len(lines) == 1
    assert json.loads(lines[0])["task"]["id"] == "store-crate-000"


def _call(crate: str) -> dict[str, object]:
    return {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": crate, "bay": 2}}


def test_a_lone_surrogate_in_an_argument_is_refused_and_every_later_episode_is_still_recorded(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    recorder = TrajectoryRecorder(tmp_path, redaction=Redaction.of(values=[TOKEN]))  # as a token makes it
    server = serve({"train": [FakeTask("store", tools=[add_crate])]}, recorder=recorder)
    client = connect(server.url)

    client.reset(split="train", index=0, client="run-7")
    refused = client.step(_call("C17\ud800"))  # sent as "C17\\ud800": valid JSON
    stored = client.step(_call("C17"))
    scored = client.step({"kind": "end_turn", "reply": "Stored."})
    client.reset(split="train", index=0, client="run-8")
    client.step(_call("C18"))
    client.step({"kind": "end_turn", "reply": "Stored."})
    client.reset(split="train", index=0)  # the second episode is torn down, then recorded
    assert until(lambda: recorder.written == 2, 10)

    error = refused.observation["error"]
    assert error["code"] == "INVALID_ARGUMENTS" and refused.observation["turn"] == 1 and not refused.done
    assert "argument 'crate'" in error["message"] and "not valid Unicode" in error["message"]
    assert stored.observation["result"] == "stored dry crate C17 in bay 2" and scored.reward == 1.0
    first, second = sorted(read_trajectories(tmp_path), key=lambda t: t.started_at or 0)
    assert [(c.arguments["crate"], c.error_code) for c in first.turns[0].calls] == [
        ("C17\ufffd", "INVALID_ARGUMENTS"),
        ("C17", None),
    ]
    assert (first.client, second.client, second.score, recorder.dropped) == ("run-7", "run-8", 1.0, 0)


def stray_bytes(crate: str) -> str:
    """Read a crate's label off a scanner that hands back half of a UTF-16 pair.

    Args:
        crate: The crate's label.
    """
    return f"scanned {crate}\udc80"


def test_a_tool_that_returns_a_lone_surrogate_answers_with_the_replacement_character_and_is_recorded(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    recorder = TrajectoryRecorder(tmp_path, redaction=Redaction.of(values=[TOKEN]))
    server = serve({"train": [FakeTask("scan", tools=[stray_bytes])]}, recorder=recorder)
    client = connect(server.url)

    client.reset(split="train", index=0)
    scanned = client.step({"kind": "call_tool", "tool": "stray_bytes", "arguments": {"crate": "C1"}})
    scored = client.step({"kind": "end_turn", "reply": "Scanned."})
    client.reset(split="train", index=0)
    assert until(lambda: recorder.written == 1, 10)

    assert scanned.observation["result"] == "scanned C1\ufffd" and scanned.observation["error"] is None
    assert scored.reward == 1.0
    (trajectory,) = read_trajectories(tmp_path)
    assert trajectory.turns[0].calls[0].result == "scanned C1\ufffd"


def test_every_trajectory_a_failing_disk_loses_is_counted_in_metrics(
    serve: Serve, connect: Connect, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = TrajectoryRecorder(tmp_path)
    monkeypatch.setattr(recorder, "_open", lambda: open("/dev/full", "ab"))  # noqa: SIM115 - ENOSPC
    server = serve({"train": [FakeTask("store", tools=[add_crate])]}, recorder=recorder)
    client = connect(server.url)

    for _ in range(3):  # each scored episode is torn down at once, then recorded
        client.reset(split="train", index=0)
        client.step({"kind": "end_turn", "reply": "Nothing."})
    assert until(lambda: recorder.dropped == 3, 10)
    samples = scrape(server.url)

    assert samples[("agent_env_trajectories_dropped_total", (("reason", "write_failed"),))] == 3
    assert samples[("agent_env_trajectories_recorded_total", ())] == 0
