"""A bundle's reference plays: `solutions/SPLIT.jsonl`, a `Solution` per line, each checked against
its task: a task of that split, as many turns as the task plays, only the tools it offers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from agent_env._bundle.checks import hint, turns
from agent_env._bundle.folder import BundleFolder
from agent_env._bundle.tasks import TASK_SUFFIXES, Splits
from agent_env._error_types import validation_problems
from agent_env._specs import STEP_TAGS, Solution
from agent_env._task import Task


def read_solutions(folder: BundleFolder, read: Splits) -> dict[str, dict[str, Solution]]:
    """Split -> task id -> the task's reference play, for each file of `solutions/`."""
    splits = read.tasks
    directory = folder.root / "solutions"
    files = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    solutions: dict[str, dict[str, Solution]] = {}
    for file in files:
        where = f"solutions/{file.name}"
        split = file.stem
        if split not in splits:
            if not any((folder.root / "tasks" / f"{split}{suffix}").exists() for suffix in TASK_SUFFIXES):
                folder.problem(
                    where,
                    f"split '{split}' has no tasks{hint(split, splits)}: name the file after a "
                    "split of tasks/, or delete it",
                )
            continue  # else that split's tasks failed to load: those problems are reported
        lines = folder.entries(file, where)
        if lines is None:
            continue
        tasks = {task.id: task for task in splits[split]}
        found: dict[str, Solution] = {}
        for line, raw in lines:
            place = f"{where}:{line}"
            solution = _solution(folder, place, raw, split, tasks, read.listed.get(split, frozenset()))
            if solution is None:
                continue
            if solution.id in found:
                folder.problem(place, f"a second solution of task '{solution.id}'; keep one line per task")
                continue
            found[solution.id] = solution
        solutions[split] = found
    return solutions


def _solution(
    folder: BundleFolder, place: str, raw: Any, split: str, tasks: Mapping[str, Task], listed: frozenset[str]
) -> Solution | None:
    try:
        solution = Solution.model_validate(raw)
    except ValidationError as exc:
        label = f" (task '{raw['id']}')" if isinstance(raw, dict) and isinstance(raw.get("id"), str) else ""
        for message in validation_problems(exc, noun="field", tags=STEP_TAGS):
            folder.problem(f"{place}{label}", message)
        return None
    task = tasks.get(solution.id)
    if task is None:
        if solution.id in listed or folder.reported(f"tasks/{split}."):
            return None  # the task is (or may be) one that did not load: why is reported
        folder.problem(
            place,
            f"task '{solution.id}' is not a task of split '{split}'{hint(solution.id, tasks)}: "
            f"a solution names a task of tasks/{split}.jsonl by its id",
        )
        return None
    if not len(task.turns) <= len(solution.turns) <= task.max_turns:
        has = (
            f"has {turns(len(task.turns))}"
            if task.user is None
            else f"fixes {turns(len(task.turns))} and lets its user add up to {task.max_turns} in all"
        )
        folder.problem(
            f"{place} (task '{solution.id}')",
            f"the solution plays {turns(len(solution.turns))} and the task {has}: "
            'write one {"calls": [...], "reply": ...} per turn of the task',
        )
        return None
    return solution if _offered(folder, f"{place} (task '{solution.id}')", solution, task) else None


def _offered(folder: BundleFolder, where: str, solution: Solution, task: Task) -> bool:
    """Whether every tool the solution calls is one the task offers its agent; an MCP env's tools
    are known only once its server runs, so a task with one is checked when it is played."""
    if not task.toolset.tools_known:
        return True
    offered = [tool["function"]["name"] for tool in task.toolset.tools]
    unknown = [
        (number, call.tool)
        for number, turn in enumerate(solution.turns, 1)
        for call in turn.all_calls
        if call.tool not in offered
    ]
    for number, name in unknown:
        folder.problem(
            where,
            f"turn {number} calls tool '{name}', which the task does not offer"
            f"{hint(name, offered)} (tools: {', '.join(offered) or 'none'})",
        )
    return not unknown
