"""Successful rollouts as demonstrations: recorded trajectories sifted into the plays SFT learns from.

The rule, per trajectory (`agent-env serve --record`, `agent-env eval --out`), in this order: one read
again (the same trajectory id) is counted once; one of another split is left out; one that is not of
a task the server serves at its split and index (another id, another toolset, other prompts, or,
scored, another count of turns than the task has) is foreign: an error naming each, or with
`foreign="skip"` left out with a warning; one that did not end scored (failed, abandoned, an eval
error) or scored below `min_score` is left out. Every one left out is counted in the summary; none
is dropped unsaid. What is kept becomes rows in `_demonstrations.py`, the one row builder.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent_env._errors import ArgumentError
from agent_env._specs import TaskSpec
from agent_env.training.trl._demonstrations import Offered, dataset_of_plays
from agent_env.training.trl._errors import DemonstrationError, DemonstrationWarning

if TYPE_CHECKING:
    from datasets import Dataset

    from agent_env._trajectory import Trajectory

Foreign = Literal["error", "skip"]
FOREIGN_CHOICES: tuple[Foreign, ...] = ("error", "skip")
NAMED = 10
"""Foreign trajectories a message names; the rest are counted."""
log = logging.getLogger("agent_env.training.trl")


@dataclass
class Sifted:
    """Recorded trajectories of one split, sorted into the successes kept and the rest, counted."""

    split: str
    min_score: float
    kept: list[tuple[TaskSpec, Trajectory]] = field(default_factory=list)
    below: int = 0
    unscored: Counter[str] = field(default_factory=Counter)
    """By how the episode ended: failed, abandoned, error."""
    other_splits: Counter[str] = field(default_factory=Counter)
    repeated: int = 0
    foreign: list[str] = field(default_factory=list)
    """Why each foreign trajectory is, naming it."""

    @property
    def of_split(self) -> int:
        """Trajectories of the split, a repeated one once."""
        return len(self.kept) + self.below + sum(self.unscored.values()) + len(self.foreign)

    @property
    def read(self) -> int:
        """Trajectories read, each repeat counted."""
        return self.of_split + sum(self.other_splits.values()) + self.repeated

    @property
    def sought(self) -> str:
        return f"split '{self.split}', score at least {self.min_score:g}"

    def left_out(self) -> str:
        """What was left out, counted by why; empty when nothing was."""
        parts = [f"{self.below} scored below {self.min_score:g}"] if self.below else []
        parts += [f"{count} {kind}" for kind, count in sorted(self.unscored.items())]
        parts += [f"{count} of split '{split}'" for split, count in sorted(self.other_splits.items())]
        parts += [f"{len(self.foreign)} foreign"] if self.foreign else []
        parts += [f"{self.repeated} read twice (same trajectory id)"] if self.repeated else []
        return ", ".join(parts)

    def summary(self) -> str:
        what = f"kept {len(self.kept)} of {self.read} trajectories read ({self.sought})"
        return f"{what}; left out: {left}" if (left := self.left_out()) else what

    def none_kept(self) -> str:
        return (
            f"none of {self.read} trajectories read is a success ({self.sought}); left out: "
            f"{self.left_out()}. Sample more (`agent-env eval --split {self.split} -n K --out DIR`), or "
            "pass a lower min_score"
        )

    def foreign_report(self, url: str) -> str:
        """The foreign trajectories, the first `NAMED` by name."""
        named = "\n  ".join(self.foreign[:NAMED])
        more = f"\n  and {len(self.foreign) - NAMED} more" if len(self.foreign) > NAMED else ""
        return (
            f"{len(self.foreign)} of {self.of_split} trajectories of split '{self.split}' are not of a task "
            f"{url} serves:\n  {named}{more}\n"
        )


def successes_dataset(
    trajectories: str | Path | Trajectory | Iterable[Trajectory],
    split: str,
    tasks: Sequence[TaskSpec],
    *,
    url: str,
    offered: Offered,
    min_score: float,
    foreign: Foreign,
) -> Dataset:
    """`AgentEnv.demonstrations_from`: the trajectories of `split` that scored at least `min_score`, as
    rows, the server at `url` serving `tasks`; what is left out counted in one INFO line."""
    min_score = check_min_score(min_score)
    if foreign not in FOREIGN_CHOICES:
        raise ArgumentError(f"foreign must be one of {', '.join(FOREIGN_CHOICES)}, got {foreign!r}")
    sifted = sift(trajectories_of(trajectories), split, tasks, min_score)
    if sifted.read == 0:
        where = trajectories if isinstance(trajectories, str | Path) else "the trajectories given"
        raise DemonstrationError(
            f"no trajectories in {where}: `agent-env eval --split {split} -n K --out DIR` or "
            "`agent-env serve --record DIR` writes them"
        )
    if sifted.foreign:
        report = sifted.foreign_report(url)
        if foreign == "error":
            fix = (
                "Pass the trajectories of this server's tasks (a bundle changed since they were "
                "recorded is another bundle), or foreign='skip' to leave these out."
            )
            raise DemonstrationError(report + fix, tuple(sifted.foreign))
        warnings.warn(f"{report}They are left out.", DemonstrationWarning, stacklevel=3)
    if not sifted.kept:
        raise DemonstrationError(sifted.none_kept())
    log.info("demonstrations from trajectories: %s", sifted.summary())
    return dataset_of_plays(sifted.kept, offered(task for task, _ in sifted.kept))


def trajectories_of(given: str | Path | Trajectory | Iterable[Trajectory]) -> Iterator[Trajectory]:
    """The trajectories given: a file, a folder of files, one trajectory, or any iterable of them
    (the record schema is imported here, when asked: the trainer's import stays light)."""
    from agent_env._trajectory import Trajectory
    from agent_env._trajectory_reader import read_trajectories

    if isinstance(given, Trajectory):
        yield given
        return
    if not isinstance(given, str | Path):
        yield from given
        return
    if not Path(given).exists():
        raise FileNotFoundError(
            f"{given}: no such file or folder of trajectories (`agent-env eval --out DIR` and "
            "`agent-env serve --record DIR` write them)"
        )
    yield from read_trajectories(given)


def check_min_score(min_score: float) -> float:
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not 0 <= min_score <= 1:
        raise ArgumentError(f"min_score must be a number from 0 to 1 (a task's score), got {min_score!r}")
    return float(min_score)


def sift(
    trajectories: Iterable[Trajectory], split: str, tasks: Sequence[TaskSpec], min_score: float
) -> Sifted:
    """The trajectories sorted by the module's rule, against the server's `tasks` of `split`."""
    sifted = Sifted(split, min_score)
    seen: set[str] = set()
    for trajectory in trajectories:
        if trajectory.id in seen:
            sifted.repeated += 1
            continue
        seen.add(trajectory.id)
        if trajectory.task.split != split:
            sifted.other_splits[trajectory.task.split] += 1
            continue
        task = tasks[trajectory.task.index] if 0 <= trajectory.task.index < len(tasks) else None
        if (why := foreign(trajectory, task)) is not None:
            sifted.foreign.append(why)
        elif trajectory.outcome.kind != "scored" or trajectory.score is None:
            sifted.unscored[trajectory.outcome.kind] += 1
        elif trajectory.score < min_score and not math.isclose(trajectory.score, min_score, abs_tol=1e-9):
            sifted.below += 1
        else:
            assert task is not None
            sifted.kept.append((task, trajectory))
    return sifted


def foreign(trajectory: Trajectory, task: TaskSpec | None) -> str | None:
    """Why `trajectory` is not a play of the server's `task` at its split and index, naming it; None
    when it is."""
    ref = trajectory.task
    name = f"trajectory {trajectory.id} of {ref.split}/{ref.index} '{ref.id}'"
    if task is None:
        return f"{name}: the server serves no {ref.split}/{ref.index}"
    if task.id != ref.id:
        return f"{name}: the server's {ref.split}/{ref.index} is '{task.id}'"
    if task.toolset.name != ref.toolset:
        return f"{name}: its toolset is '{ref.toolset}', the server's task's '{task.toolset.name}'"
    if trajectory.system_prompt != _content(task.prompt, "system"):
        return f"{name}: its system prompt is not the task's"
    if trajectory.turns and trajectory.turns[0].prompt != _content(task.prompt, "user"):
        return f"{name}: its first turn's prompt is not the task's"
    if trajectory.outcome.kind == "scored" and not _turns_fit(len(trajectory.turns), task):
        counted = len(trajectory.turns)
        turns = f"{counted} turn{'s' if counted != 1 else ''}"
        return f"{name}: it has {turns}; the server's task has {_turns(task)}"
    return None


def _content(prompt: Sequence[Mapping[str, str]], role: str) -> str | None:
    """The last message of `role` in the task's prompt (its system prompt, its first turn)."""
    return next((message["content"] for message in reversed(prompt) if message.get("role") == role), None)


def _turns_fit(counted: int, task: TaskSpec) -> bool:
    if task.user is None:
        return counted == task.turns
    return task.turns <= counted <= (task.max_turns if task.max_turns is not None else counted)


def _turns(task: TaskSpec) -> str:
    if task.user is None:
        return str(task.turns)
    return f"{task.turns} to {task.max_turns}" if task.max_turns is not None else f"at least {task.turns}"
