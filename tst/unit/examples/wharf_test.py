"""The wharf example: its committed tasks are what its generator writes, and cover every kind of task."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import agent_env
from agent_env import Task
from agent_env._verifiers import BashCheck, FunctionCheck, ItemsCheck
from tst.support.generated import contents, generator

WHARF = Path(__file__).resolve().parents[3] / "examples" / "wharf"
BUNDLE = agent_env.load_bundle(WHARF)


@pytest.mark.parametrize("sub", ["tasks", "solutions"])
def test_the_committed_files_are_exactly_what_generate_py_writes(sub: str, tmp_path: Path):
    generator(WHARF).write(tmp_path)

    assert contents(tmp_path / sub) == contents(WHARF / sub)


def test_the_train_split_has_at_least_30_tasks():
    assert len(BUNDLE.tasks("train")) >= 30


KINDS: dict[str, Callable[[Task], bool]] = {
    "a single-turn dock task scored by items": lambda task: (
        len(task.turns) == 1
        and task.toolset.name == "dock"
        and all(isinstance(v.spec, ItemsCheck) for v in task.verifiers)
    ),
    "a two-turn task": lambda task: len(task.turns) == 2,
    "a pantry task": lambda task: task.toolset.name == "pantry",
    "a dock+pantry task": lambda task: task.toolset.name == "dock+pantry",
    "a task played in a role of its own": lambda task: task.toolset.role != "default",
    "a task that changes a role's tool access": lambda task: bool(task.toolset.access),
    "a task scored by a function of verifiers.py": lambda task: any(
        isinstance(v.spec, FunctionCheck) for v in task.verifiers
    ),
    "a bash task scored by a bash verifier": lambda task: (
        task.toolset.bash and any(isinstance(v.spec, BashCheck) for v in task.verifiers)
    ),
}


@pytest.mark.parametrize("split", ["train", "eval"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_split_has_every_kind_of_task(split: str, kind: str):
    matching = [task.id for task in BUNDLE.tasks(split) if KINDS[kind](task)]

    assert matching, f"split '{split}' has no {kind}"
