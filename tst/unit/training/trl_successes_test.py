"""`AgentEnv.demonstrations_from`: recorded trajectories (a server's `--record`, eval's `--out`) of real
plays on a loopback server, their successes made into exactly the rows `demonstrations` gives."""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agent_env import Redaction, Solution, Trajectory, TrajectoryRecorder, read_trajectories
from agent_env.eval import ScriptedPolicy, evaluate
from agent_env.openenv import BackgroundServer
from agent_env.training.trl import AgentEnv, DemonstrationError, DemonstrationWarning
from tst.support.bundles import a_task, make_bundle
from tst.support.serving import Serve
from tst.support.waiting import until
from tst.unit.training._trl import Open, dock_task

pytestmark = pytest.mark.needs("trl_installed")

STORE_C1 = {"calls": [{"tool": "add_crate", "arguments": {"crate": "C1", "bay": 2}}], "reply": "Stored C1."}


JAMMED = {
    "calls": [{"tool": "jam_crane", "arguments": {"crate": "C1"}}, STORE_C1["calls"][0]],
    "reply": "Stored by hand.",
}
TWO_TURNS = ("Store crate C1 in bay 2.", "Say when you are done.")


def script(task_id: str, *turns: dict[str, Any]) -> Solution:
    return Solution.model_validate({"id": task_id, "turns": list(turns)})


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[TrajectoryRecorder]:
    made = TrajectoryRecorder(tmp_path / "recorded")
    yield made
    made.close()


def recorded(recorder: TrajectoryRecorder, count: int) -> Path:
    """The recorder's folder, once `count` trajectories are written to it."""
    assert until(lambda: recorder.written >= count), f"{recorder.written} of {count} recorded"
    return recorder.folder


class EachSample:
    """A policy that plays `script` afresh in each sample (one `ScriptedPolicy` plays one)."""

    def __init__(self, script: Solution) -> None:
        self.script = script
        self.playing = ScriptedPolicy(script)

    def __call__(self, messages: list[Any], tools: list[Any]) -> Any:
        if all(message["role"] != "assistant" for message in messages):
            self.playing = ScriptedPolicy(self.script)
        return self.playing(messages, tools)


def sampled(server: BackgroundServer, out: Path, *, samples: int = 1, split: str = "train") -> Path:
    """`agent-env eval --split SPLIT -n SAMPLES --out OUT`, each task played by storing crate C1."""
    evaluate(
        server.url, EachSample(script("any", STORE_C1)), split=split, samples=samples, concurrency=1, out=out
    )
    return out


def ids(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [row["id"] for row in rows]


def test_the_rows_of_recorded_successes_are_the_demonstrations_of_the_same_plays_recorded_by_the_server(
    serve: Serve, open_env: Open, recorder: TrajectoryRecorder
) -> None:
    tasks = [
        dock_task("store", solution=script("store", STORE_C1)),
        dock_task(
            "jammed", turns=TWO_TURNS, solution=script("jammed", JAMMED, {"calls": [], "reply": "Done."})
        ),
    ]
    env = open_env(serve({"train": tasks}, recorder=recorder).url)
    demonstrations = env.demonstrations()

    rows = env.demonstrations_from(recorded(recorder, 2))

    assert {trajectory.recorded_by for trajectory in read_trajectories(recorder.folder)} == {"server"}
    assert rows.features == demonstrations.features
    assert "the crane is jammed" in str(rows.to_list())
    assert sorted(rows.to_list(), key=lambda row: row["id"]) == sorted(
        demonstrations.to_list(), key=lambda row: row["id"]
    )


def test_sampled_successes_recorded_by_eval_are_each_their_tasks_demonstration_and_failures_are_left_out(
    serve: Serve, open_env: Open, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tasks = [dock_task("store", solution=script("store", STORE_C1)), dock_task("never", score=0.0)]
    server = serve({"train": tasks})
    env = open_env(server.url)
    (demonstration,) = env.demonstrations().to_list()
    out = sampled(server, tmp_path / "eval", samples=3)

    with caplog.at_level(logging.INFO, logger="agent_env.training.trl"):
        rows = env.demonstrations_from(out).to_list()

    assert {trajectory.recorded_by for trajectory in read_trajectories(out)} == {"eval"}
    assert rows == [demonstration] * 3
    assert "kept 3 of 6 trajectories read (split 'train', score at least 1); left out: 3 scored below 1" in (
        caplog.text
    )


def test_an_eval_recording_keeps_the_steps_the_policy_made_and_its_rows_are_the_demonstrations_steps(
    serve: Serve, open_env: Open, recorder: TrajectoryRecorder, tmp_path: Path
) -> None:
    listed = {"tool": "list_crates"}
    stored = STORE_C1["calls"][0]
    jammed = {"tool": "jam_crane", "arguments": {"crate": "C2"}}
    steps = {"calls": [listed, [stored, jammed]], "reply": "Stored C1."}
    server = serve({"train": [dock_task("store", solution=script("store", steps))]}, recorder=recorder)
    env = open_env(server.url)
    (demonstration,) = env.demonstrations().to_list()
    out = tmp_path / "eval"
    evaluate(server.url, EachSample(script("store", steps)), split="train", concurrency=1, out=out)

    (row,) = env.demonstrations_from(out).to_list()

    (played,) = read_trajectories(out)
    assert [(call.tool, call.step) for call in played.turns[0].calls] == [
        ("list_crates", 1),
        ("add_crate", 2),
        ("jam_crane", 2),
    ]
    assert row == demonstration
    calling = [
        [call["function"]["name"] for call in m["tool_calls"]] for m in row["messages"] if "tool_calls" in m
    ]
    assert calling == [["list_crates"], ["add_crate", "jam_crane"], ["end_turn"]]
    # The server saw the calls one at a time: in its recording each is a step of its own.
    by_server = env.demonstrations_from(recorded(recorder, 2)).to_list()
    assert [
        [
            [call["function"]["name"] for call in m["tool_calls"]]
            for m in each["messages"]
            if "tool_calls" in m
        ]
        for each in by_server
    ] == [[["list_crates"], ["add_crate"], ["jam_crane"], ["end_turn"]]] * 2


def test_a_threshold_keeps_the_trajectories_scoring_at_least_it(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    tasks = [dock_task("half", score=0.5), dock_task("none", score=0.0)]
    server = serve({"train": tasks})
    env = open_env(server.url)
    out = sampled(server, tmp_path / "eval")

    assert ids(env.demonstrations_from(out, min_score=0.5).to_list()) == ["half"]
    assert ids(env.demonstrations_from(out, min_score=0.0).to_list()) == ["half", "none"]


def test_failed_and_abandoned_episodes_are_left_out_and_counted_by_how_they_ended(
    serve: Serve,
    open_env: Open,
    tmp_path: Path,
    recorder: TrajectoryRecorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = [dock_task("store"), dock_task("broken", deploy_error=RuntimeError("the quay is flooded"))]
    server = serve({"train": tasks}, recorder=recorder)
    sampled(server, tmp_path / "eval")
    rollout = open_env(server.url)
    environment = rollout.factory()
    environment.reset(**rollout.dataset[0])
    environment.add_crate(crate="C1", bay=2)
    rollout.close()  # a rollout cut short: the server abandons its episode
    env = open_env(server.url)

    with caplog.at_level(logging.INFO, logger="agent_env.training.trl"):
        rows = env.demonstrations_from(recorded(recorder, 3)).to_list()

    assert ids(rows) == ["store"]
    assert (
        "kept 1 of 3 trajectories read (split 'train', score at least 1); left out: 1 abandoned, 1 failed"
        in (caplog.text)
    )


def test_trajectories_of_another_split_and_repeats_of_one_trajectory_are_left_out_and_counted(
    serve: Serve, open_env: Open, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve({"train": [dock_task("store")], "eval": [dock_task("held-out")]})
    env = open_env(server.url)
    out = sampled(server, tmp_path / "eval")
    sampled(server, out, split="eval")
    trajectories = list(read_trajectories(out))

    with caplog.at_level(logging.INFO, logger="agent_env.training.trl"):
        rows = env.demonstrations_from([*trajectories, trajectories[0]]).to_list()

    assert ids(rows) == ["store"]
    assert (
        "kept 1 of 3 trajectories read (split 'train', score at least 1); left out: 1 of split 'eval', "
        in (caplog.text)
    )
    assert "1 read twice (same trajectory id)" in caplog.text


def test_trajectories_of_tasks_the_server_does_not_serve_are_an_error_naming_each(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    before = serve({"train": [dock_task("store"), dock_task("stack")]})
    out = sampled(before, tmp_path / "eval")
    env = open_env(serve({"train": [dock_task("store"), dock_task("count")]}).url)
    stack = next(t for t in read_trajectories(out) if t.task.id == "stack")

    with pytest.raises(DemonstrationError) as raised:
        env.demonstrations_from(out)

    assert str(raised.value).startswith(
        f"1 of 2 trajectories of split 'train' are not of a task {env.url} serves:\n"
        f"  trajectory {stack.id} of train/1 'stack': the server's train/1 is 'count'\n"
    )
    assert "foreign='skip'" in str(raised.value)
    assert raised.value.failures == (
        f"trajectory {stack.id} of train/1 'stack': the server's train/1 is 'count'",
    )


def test_foreign_skip_leaves_them_out_with_a_warning_that_counts_them(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    before = serve({"train": [dock_task("store"), dock_task("stack"), dock_task("pile")]})
    out = sampled(before, tmp_path / "eval")
    env = open_env(serve({"train": [dock_task("store")]}).url)

    with pytest.warns(
        DemonstrationWarning, match=r"2 of 3 trajectories of split 'train' are not of a task"
    ) as warned:
        rows = env.demonstrations_from(out, foreign="skip").to_list()

    assert ids(rows) == ["store"]
    assert "the server serves no train/1" in str(warned[0].message)


def test_a_scored_trajectory_whose_turns_are_not_its_tasks_is_foreign(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    one_turn = serve({"train": [dock_task("store")]})
    out = sampled(one_turn, tmp_path / "eval")
    two_turns = dock_task("store", turns=("Store crate C1 in bay 2.", "Now list the crates."))
    env = open_env(serve({"train": [two_turns]}).url)

    with pytest.raises(DemonstrationError, match=r"'store': it has 1 turn; the server's task has 2"):
        env.demonstrations_from(out)


def test_a_changed_prompt_makes_a_trajectory_foreign(serve: Serve, open_env: Open, tmp_path: Path) -> None:
    out = sampled(serve({"train": [dock_task("store")]}), tmp_path / "eval")
    env = open_env(serve({"train": [dock_task("store", turns=("Store crate C9 in bay 1.",))]}).url)

    with pytest.raises(DemonstrationError, match=r"its first turn's prompt is not the task's"):
        env.demonstrations_from(out)


def test_no_success_at_all_is_an_error_with_the_count_and_what_to_do(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    server = serve({"train": [dock_task("never", score=0.0)]})
    env = open_env(server.url)
    out = sampled(server, tmp_path / "eval", samples=2)

    with pytest.raises(DemonstrationError) as raised:
        env.demonstrations_from(out)

    assert str(raised.value) == (
        "none of 2 trajectories read is a success (split 'train', score at least 1); left out: 2 scored "
        "below 1. Sample more (`agent-env eval --split train -n K --out DIR`), or pass a lower min_score"
    )


def test_a_path_with_no_trajectories_is_an_error_saying_what_writes_them(
    open_env: Open, serve: Serve, tmp_path: Path
) -> None:
    env = open_env(serve({"train": [dock_task()]}).url)

    with pytest.raises(FileNotFoundError, match=r"agent-env eval --out DIR"):
        env.demonstrations_from(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DemonstrationError, match=r"no trajectories in .*empty"):
        env.demonstrations_from(tmp_path / "empty")


@pytest.mark.parametrize("min_score", [-0.1, 1.5, float("nan"), True])
def test_a_threshold_outside_0_to_1_is_refused(serve: Serve, open_env: Open, min_score: float) -> None:
    env = open_env(serve({"train": [dock_task()]}).url)

    with pytest.raises(ValueError, match=r"min_score must be a number from 0 to 1"):
        env.demonstrations_from([], min_score=min_score)


USERS = """
    def reader(context, title):
        if title in context.envs["shelf"].books:
            return None
        return f"{title}, please." if "which" in context.reply.lower() else f"Where is {title}?"
"""
SOLUTION = (
    '{"id": "t1", "turns": [{"calls": [], "reply": "Which book?"}, '
    '{"calls": [{"tool": "put_book", "arguments": {"title": "Dune"}}], "reply": "Shelved."}]}\n'
)


def test_a_simulated_users_turns_come_from_the_trajectory_as_in_the_demonstrations(
    tmp_path: Path, recorder: TrajectoryRecorder
) -> None:
    task = a_task(
        turns=["I would like a book shelved."], user={"function": "reader", "args": {"title": "Dune"}}
    )
    root = make_bundle(
        tmp_path / "bundle",
        tasks={"train": [task]},
        files={"users.py": textwrap.dedent(USERS), "solutions/train.jsonl": SOLUTION},
    )
    with AgentEnv.local(root, record=tmp_path / "served") as env:
        demonstrations = env.demonstrations().to_list()
        assert until(lambda: any(read_trajectories(tmp_path / "served")))
        rows = env.demonstrations_from(tmp_path / "served").to_list()

    assert rows == demonstrations
    assert {"role": "tool", "name": "end_turn", "content": "Dune, please."} in rows[0]["messages"]


def test_a_trajectory_given_as_an_object_is_read_as_one_from_a_file(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    server = serve({"train": [dock_task("store")]})
    env = open_env(server.url)
    out = sampled(server, tmp_path / "eval")
    (trajectory,) = read_trajectories(out)
    (file,) = out.glob("*.jsonl")

    assert env.demonstrations_from(trajectory).to_list() == env.demonstrations_from(file).to_list()
    assert isinstance(trajectory, Trajectory)


def test_what_the_recording_server_redacts_is_redacted_in_the_rows_made_from_its_recording(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    recorder = TrajectoryRecorder(tmp_path / "redacted", redaction=Redaction.of(keys=["crate"]))
    server = serve({"train": [dock_task("store", solution=script("store", STORE_C1))]}, recorder=recorder)
    env = open_env(server.url)
    env.demonstrations()

    (row,) = env.demonstrations_from(recorded(recorder, 1)).to_list()

    assert row["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"crate": "[redacted]", "bay": 2}
