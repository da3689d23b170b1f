"""What a dataset's load says beyond its problems, once per dataset: a line per kind of note, naming
the fields (with how many tasks write each) or the tasks, never a line per task.

A dataset of hundreds of tasks written for a newer Harbor would otherwise print hundreds of lines
saying the same thing.
"""

from __future__ import annotations

import logging

UNKNOWN = "task.toml fields this loader does not know (a newer Harbor's?), ignored"
MAX_NAMED = 20
"""The most tasks a line names; the rest are counted."""

log = logging.getLogger("agent_env.harbor")


class DatasetNotes:
    """The notes of one load, gathered task by task and logged once, as one line per kind."""

    def __init__(self) -> None:
        self._fields: dict[str, dict[str, set[str]]] = {}
        self._tasks: dict[str, list[str]] = {}

    def field(self, why: str, field: str, task: str) -> None:
        """`task` writes `field`, which the line `why` is about."""
        self._fields.setdefault(why, {}).setdefault(field, set()).add(task)

    def task(self, why: str, task: str) -> None:
        """`task` is one the line `why` is about (`why` is a format with `{tasks}`, the tasks named)."""
        self._tasks.setdefault(why, []).append(task)

    def lines(self) -> list[str]:
        lines = []
        for why, fields in self._fields.items():
            counted = ", ".join(f"{field} ({_tasks(len(tasks))})" for field, tasks in sorted(fields.items()))
            lines.append(f"{why}: {counted}")
        for why, tasks in self._tasks.items():
            lines.append(why.format(count=_tasks(len(tasks)), tasks=named(tasks)))
        return lines

    def log(self) -> None:
        for line in self.lines():
            log.warning("%s", line)


def named(tasks: list[str]) -> str:
    """The tasks by name, the first `MAX_NAMED` of them."""
    shown = ", ".join(tasks[:MAX_NAMED])
    return shown if len(tasks) <= MAX_NAMED else f"{shown} and {len(tasks) - MAX_NAMED} more"


def _tasks(count: int) -> str:
    return f"{count} task" if count == 1 else f"{count} tasks"
