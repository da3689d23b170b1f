"""The example bundle as the tests play it: where it is, its tasks, its reference plays.

It imports OpenEnv only to play over a client (`play_reference`), so the core's tests use it too.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shutil
from pathlib import Path
from typing import Any

from agent_env._bundle.reader import Bundle
from agent_env._env import EnvDefinition
from agent_env._loading import load_bundle
from agent_env._replay import load_solutions
from agent_env._specs import Solution
from agent_env._task import Task
from agent_env._toolset import Toolset
from tst.support.waiting import running

WHARF = Path(__file__).resolve().parents[2] / "examples" / "wharf"
SINGLE_TURN_TASK = 0  # store-crate-000: a deckhand stores C17 in bay 5
TWO_TURN_TASK = 2  # store-then-move-000: store C16 in bay 2, then move it to bay 6
ACCESS_TASK = 4  # ship-crate-000: a deckhand task that enables remove_crate for its role
BASH_TASK = 10  # manifest-total-000: the clerk's dock+bash toolset
SLEEP_MARK = "60.0417"
SLEEPER = f"echo started > pid; exec sleep {SLEEP_MARK}"
"""A bash command that says in its sandbox folder that it started, then sleeps as `sleep 60.0417`.

Its own `$$` would be of bubblewrap's process namespace, not the host's; so the host finds it by its
command line."""


@functools.cache
def _bundle() -> Bundle:
    return load_bundle(WHARF)


BROKEN_LINE = {
    "id": "stray-000",
    "agent": "stowaway",
    "turns": ["Hide in bay 9."],
    "verifiers": [{"type": "items", "env": "dock", "expected": []}],
}
"""A task line naming an agent the wharf does not have: that task does not load."""


def wharf_with_a_broken_task(root: Path, train: int = 2) -> Path:
    """A copy of the wharf at `root` with only its first `train` train tasks (their reference plays
    kept), and a last line, `BROKEN_LINE`, that does not load; no eval split."""
    shutil.copytree(WHARF, root, ignore=shutil.ignore_patterns("__pycache__", "eval.jsonl", "generate.py"))
    tasks = (root / "tasks" / "train.jsonl").read_text().splitlines(keepends=True)[:train]
    (root / "tasks" / "train.jsonl").write_text("".join(tasks) + json.dumps(BROKEN_LINE) + "\n")
    ids = {json.loads(line)["id"] for line in tasks}
    plays = (root / "solutions" / "train.jsonl").read_text().splitlines(keepends=True)
    (root / "solutions" / "train.jsonl").write_text("".join(p for p in plays if json.loads(p)["id"] in ids))
    return root


def example(task_id: str) -> Task:
    """The example bundle's task `task_id`, of whichever split it is in."""
    return next(task for tasks in _bundle().splits.values() for task in tasks if task.id == task_id)


def with_envs(task: Task, *extra: EnvDefinition) -> Task:
    """`task` with more envs beside its own."""
    toolset = task.toolset
    envs = Toolset((*toolset.envs, *extra), toolset.role, toolset.access, toolset.bash)
    return dataclasses.replace(task, toolset=envs)


@functools.cache
def reference_play(task_id: str) -> Solution:
    """The task's reference play, from the bundle's solutions/train.jsonl."""
    return load_solutions(load_bundle(WHARF), "train")[task_id]


def play_reference(client: Any, task_id: str) -> list[Any]:
    """Play the task's reference play on `client`'s open episode; every answer, in order."""
    from agent_env.openenv import AgentEnvAction

    answers = []
    for turn in reference_play(task_id).turns:
        for call in turn.all_calls:
            answers.append(client.step(AgentEnvAction.call_tool(call.tool, call.arguments).wire()))
        answers.append(client.step(AgentEnvAction.end_turn(turn.reply).wire()))
    return answers


def sandbox_folders(parent: Path) -> list[Path]:
    """The local sandbox folders under `parent`."""
    return sorted(parent.glob("agent-env-sandbox-*"))


def sleeper_pids(parent: Path) -> list[int]:
    """The host's pids of the `SLEEPER` commands sleeping, once one has started under `parent`."""
    started = [folder for folder in sandbox_folders(parent) if (folder / "pid").is_file()]
    return running(SLEEP_MARK) if started else []
