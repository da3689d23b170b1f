"""What a server serves: the splits and, for each task, its spec, a way to play it and its reference play.

The server sees tasks only through `ServedTask` (a spec, and a factory of `Episode`s), so tests can
hand it fake tasks (`agent_env.testing`: real tasks whose steps are scripted), which it plays
exactly as it plays a bundle's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from agent_env._bundle.reader import Bundle
from agent_env._contracts.registry import sandbox_provider
from agent_env._contracts.sandbox import SandboxProvider
from agent_env._episode import Episode
from agent_env._errors import ArgumentError
from agent_env._loading import load_bundle
from agent_env._specs import Solution, TaskSpec
from agent_env._task import Task
from agent_env.judges._judging import Judging
from agent_env.sandbox._by_task import SandboxesByTask


@dataclass(frozen=True)
class ServedTask:
    """A task's spec, as the Task API gives it, a factory of fresh episodes of it, and its reference
    play if it has one (a bundle's `solutions/SPLIT.jsonl`), which the Task API lists too."""

    spec: TaskSpec
    new_episode: Callable[[], Episode]
    solution: Solution | None = None


ServedTasks = Mapping[str, Sequence[ServedTask]]
"""Split name -> the split's tasks, in index order."""


def served_tasks(
    bundle: Bundle | str | Path,
    *,
    sandbox: str | SandboxProvider | None = None,
    judging: Judging | None = None,
) -> ServedTasks:
    """The served tasks of a bundle; `sandbox` overrides the bundle's sandbox provider; `judging` is what
    their `judge` verifiers ask through (None: the process's own, `agent_env.judges._judging`)."""
    loaded = bundle if isinstance(bundle, Bundle) else load_bundle(bundle)
    settings = loaded.config.sandbox
    provider_of: Callable[[Task], SandboxProvider]
    if isinstance(sandbox, SandboxesByTask):
        per_task = sandbox
        provider_of = lambda task: per_task.provider_for(task.sandbox_settings)  # noqa: E731
    elif loaded.sandbox_per_task:
        if sandbox is not None and sandbox != "docker":
            raise ArgumentError(
                f"{loaded.name}'s tasks run in Docker, each in its own image: leave --sandbox out"
            )
        provider_of = lambda task: sandbox_provider("docker", task.sandbox_settings)  # noqa: E731
    else:
        provider = sandbox_provider(sandbox if sandbox is not None else settings.provider, settings)
        provider_of = lambda task: provider  # noqa: E731
    return {
        split: tuple(
            ServedTask(
                task.spec,
                partial(Episode, task, provider=provider_of(task), judging=judging),
                loaded.solutions.get(split, {}).get(task.id),
            )
            for task in tasks
        )
        for split, tasks in loaded.splits.items()
    }
