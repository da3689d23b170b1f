"""Trajectories: one made by hand, those of fake tasks really played, and folders of them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agent_env import (
    EpisodeError,
    OutcomeRecord,
    TaskRef,
    ToolCallRecord,
    Trajectory,
    TurnRecord,
    trajectory_of,
)
from agent_env.testing import FakeTask


def a_trajectory(index: int = 0, *, result: str = "stored") -> Trajectory:
    """A scored trajectory of one turn and one call, whose arguments hold a password (for redaction)."""
    arguments = {"crate": f"C{index}", "password": "hunter2"}
    call = ToolCallRecord(tool="add_crate", arguments=arguments, result=result)
    return Trajectory(
        recorded_by="server",
        task=TaskRef(split="train", index=index, id=f"task-{index}", toolset="dock"),
        turns=[TurnRecord(turn=1, prompt="Store a crate.", calls=[call], reply="Done.")],
        score=1.0,
        outcome=OutcomeRecord(kind="scored"),
    )


def played(
    task: FakeTask, *steps: tuple[Any, ...], split: str = "train", index: int = 0, client: str | None = None
) -> Trajectory:
    """The trajectory of `task` played at `split`/`index`: ("call", tool, arguments) and ("end", reply)
    steps, a refused call kept as the trajectory keeps it; torn down after the last step."""
    episode = task.new_episode(task.task_at(split, index))

    async def play() -> None:
        await episode.deploy()
        for step in steps:
            if step[0] == "call":
                with contextlib.suppress(EpisodeError):
                    await episode.call_tool(step[1], step[2] if len(step) > 2 else {})
            else:
                await episode.end_turn(step[1])
        await episode.teardown()

    asyncio.run(play())
    return trajectory_of(episode, client=client)


def write_folder(folder: Path, trajectories: Iterable[Trajectory], *, name: str = "run.jsonl") -> Path:
    """`trajectories` as one JSON line each in `folder/name` (appended)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / name).open("a", encoding="utf-8") as file:
        for trajectory in trajectories:
            file.write(json.dumps(trajectory.model_dump(mode="json")) + "\n")
    return folder


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Path]:
    """A FIFO at `path`. On leaving, a reader stuck opening it (a viewer that waits on it: the bug its
    tests look for) is let go, a writer opening and closing it, so a failing run leaves no thread stuck."""
    os.mkfifo(path)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):  # no reader waits (ENXIO), or the test removed it
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
