"""The helper across processes: AsyncGRPO's spawned rollout process, and trainers that exit or die."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env.sandbox import LocalSandboxProvider
from agent_env.testing import FakeTask
from agent_env.training.trl import AgentEnv
from tst.support.serving import Serve
from tst.support.waiting import until
from tst.support.wharf import BASH_TASK, WHARF, sandbox_folders
from tst.unit.training._spawned import play_one_rollout
from tst.unit.training._trl import Open, dock_task

pytestmark = pytest.mark.needs("trl_installed")

ROOT = Path(__file__).resolve().parents[3]
TEARDOWN_S = 30.0
CHILD_S = 120.0


def test_the_factory_pickles_and_plays_in_a_spawned_process_as_asyncgrpos_rollout_process_does(
    serve: Serve, open_env: Open
) -> None:
    task = dock_task()
    env = open_env(serve({"train": [task]}).url)
    factory = env.factory
    assert pickle.loads(pickle.dumps(factory)) is factory  # in the process that built it: the same class

    context = multiprocessing.get_context("spawn")
    answers = context.Queue()
    child = context.Process(target=play_one_rollout, args=(factory, dict(env.dataset[0]), answers))
    child.start()
    try:
        answer = answers.get(timeout=CHILD_S)
    finally:
        child.join(CHILD_S)

    assert answer == ("played", "dock", "stored dry crate C1 in bay 2", 1.0)
    assert child.exitcode == 0
    assert (
        len(task.episodes) == 1
    )  # the child's rollout: neither the factory nor the child deployed to list tools
    assert until(lambda: task.live == [], TEARDOWN_S)


def test_a_subclass_of_a_factory_class_pickles_by_name_and_a_runtime_one_fails_to_pickle(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()]}).url)
    factory = typing.cast(type, env.factory)
    module = types.ModuleType("agent_env_user_environments")

    class CountingDock(factory):  # type: ignore[misc,valid-type]
        pass

    CountingDock.__module__, CountingDock.__qualname__ = module.__name__, "CountingDock"
    module.CountingDock = CountingDock  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        assert pickle.loads(pickle.dumps(CountingDock)) is CountingDock
    finally:
        del sys.modules[module.__name__]

    class Unreachable(factory):  # type: ignore[misc,valid-type]
        def list_crates(self) -> str:
            return "overridden"

    with pytest.raises((pickle.PicklingError, AttributeError), match="Unreachable"):
        pickle.dumps(Unreachable)


@pytest.fixture
def trainer() -> Iterator[typing.Callable[..., subprocess.Popen[str]]]:
    """Start a stand-in trainer process and wait until it plays; each is killed after the test."""
    started: list[subprocess.Popen[str]] = []

    def start(*arguments: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "tst.unit.training._trainer", *arguments],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        started.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line == "playing\n", f"the trainer did not start playing (exit {process.poll()})"
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(CHILD_S)


@pytest.mark.parametrize("ending", ["exits", "is killed"])
def test_a_trainer_that_exits_or_is_killed_mid_episode_leaves_no_episode_running_on_the_server(
    serve: Serve, trainer: Any, ending: str
) -> None:
    task: FakeTask = dock_task()
    server = serve({"train": [task]})

    process = trainer(server.url, "exit" if ending == "exits" else "wait")
    assert len(task.live) == 1
    if ending == "is killed":
        process.send_signal(signal.SIGKILL)
    process.wait(CHILD_S)

    assert until(lambda: task.live == [], TEARDOWN_S)


def test_local_serves_the_bundle_in_process_and_close_tears_down_its_episodes_and_stops_it(
    tmp_path: Path,
) -> None:
    env = AgentEnv.local(WHARF, sandbox=LocalSandboxProvider(tmp_path))
    try:
        row = env.dataset[BASH_TASK]
        assert row["environment"] == "dock+bash"
        environment = typing.cast(dict[str, Any], env.factory)["dock+bash"]()
        environment.reset(**{k: v for k, v in row.items() if k != "environment"})
        assert "[exit code: 0]" in environment.bash(command="echo started > note")
        assert len(sandbox_folders(tmp_path)) == 1
    finally:
        env.close()

    assert sandbox_folders(tmp_path) == []
    with pytest.raises(ConnectionError):
        AgentEnv(env.url)


def test_a_trainer_using_local_that_exits_without_closing_tears_its_episodes_down(
    trainer: Any, tmp_path: Path
) -> None:
    process = trainer("--local", str(WHARF), str(tmp_path), "exit")
    assert process.wait(CHILD_S) == 0

    assert sandbox_folders(tmp_path) == []
