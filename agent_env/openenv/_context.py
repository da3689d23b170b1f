"""What every session of one server shares: the tasks it serves, its episodes, its connections."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent_env._error_types import AgentEnvError, ErrorCode
from agent_env._served import ServedTask, ServedTasks
from agent_env._threads import run_in_own_thread
from agent_env.openenv._calls import ClientLink
from agent_env.openenv._tracker import EpisodeTracker

_SHOWN = 100
"""The most characters of a split's name a refusal shows."""


class TaskLookupError(AgentEnvError, LookupError):
    """A split or an index the server does not serve: `UNKNOWN_SPLIT` or `INDEX_OUT_OF_RANGE`."""

    code: str


@dataclass
class ServerContext:
    """One server's shared state; sessions and routes use it on the server's event loop."""

    name: str
    served: ServedTasks
    description: str = ""
    max_concurrent_envs: int = 1
    tracker: EpisodeTracker = field(default_factory=EpisodeTracker)
    links: set[ClientLink] = field(default_factory=set)
    fingerprint: str = ""
    """What decides the tasks and their scores (`agent_env.tasks_fingerprint`): the status and every
    reset's answer carry it."""

    def tasks(self, split: str) -> Sequence[ServedTask]:
        tasks = self.served.get(split)
        if tasks is None:
            raise TaskLookupError(
                ErrorCode.UNKNOWN_SPLIT, f"unknown split '{_shown(split)}' (splits: {self.splits_summary()})"
            )
        return tasks

    def task(self, split: str, index: int) -> ServedTask:
        tasks = self.tasks(split)
        if not 0 <= index < len(tasks):
            raise TaskLookupError(
                ErrorCode.INDEX_OUT_OF_RANGE, f"index {index} is out of range for {self.split_span(split)}"
            )
        return tasks[index]

    def split_span(self, split: str) -> str:
        """A served split's indices, as refusals name them: `split 'eval' (11 tasks: 0..10)`."""
        tasks = self.tasks(split)
        span = f"0..{len(tasks) - 1}" if tasks else "none"
        return f"split '{_shown(split)}' ({_count(len(tasks))}: {span})"

    def splits_summary(self) -> str:
        return ", ".join(f"{split} ({_count(len(tasks))})" for split, tasks in self.served.items())

    async def shut_down(self) -> None:
        """Interrupt every call still running, tear down every episode and wait for it, then write the
        last trajectories."""
        for link in list(self.links):
            link.lost(ErrorCode.SHUTTING_DOWN)
        await self.tracker.drain()
        if self.tracker.recorder is not None:
            await run_in_own_thread(self.tracker.recorder.close)


def _shown(name: str) -> str:
    """A name from a request, as a refusal shows it: cut short, so no refusal echoes a megabyte."""
    return name if len(name) <= _SHOWN else f"{name[:_SHOWN]}..."


def _count(tasks: int) -> str:
    return f"{tasks} task{'s' if tasks != 1 else ''}"
