"""The training dataset's rows: one per task, `prompt` (chat messages), `split`, `index`, and, when the
factory has several toolsets, `environment` (the toolset whose class TRL makes for the row)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_env._errors import ArgumentError
from agent_env._specs import TaskSpec


def task_rows(
    tasks: Sequence[TaskSpec], toolsets: Mapping[str, TaskSpec], *, split: str, factory_split: str
) -> list[dict[str, Any]]:
    """The rows of `split`'s `tasks` for the factory of `factory_split`, whose `toolsets` they must use."""
    if stray := sorted({task.toolset.name for task in tasks} - set(toolsets)):
        raise ArgumentError(
            f"split '{split}' has tasks of toolsets ({', '.join(stray)}) that split '{factory_split}', the "
            f"factory's, lacks, so TRL could not run them: make AgentEnv(url, split='{split}') for them"
        )
    multi = len(toolsets) > 1
    return [_row(task, multi) for task in tasks]


def _row(task: TaskSpec, multi: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"prompt": task.prompt, "split": task.split, "index": task.index}
    if multi:
        row["environment"] = task.toolset.name
    return row
