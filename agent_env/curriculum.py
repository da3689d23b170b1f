"""An online curriculum: which task a GRPO group plays next, from the scores groups got so far.

GRPO learns only from a group whose rollouts scored differently; a group that all scored alike (all
solved, all failed) costs a batch's compute and teaches nothing. The offline answer is to sample each
task before training and keep the ones with a pass rate between two bounds; it misses the tasks a
model solves rarely (one sample in twenty mostly shows 0 of 8), and it cannot follow the model as it
learns. The online answer (DAPO's dynamic sampling, prime-rl's difficulty pools, TRL#3708) is to draw
each group's task from what the groups of each task showed recently:

- a task's **signal** is the chance that its next group's scores differ: a Beta posterior over its
  recent groups, `(groups with signal + 1) / (groups + 2)`, its counts decayed by `memory` each time
  another group of it starts (recent groups count most, as the model changes);
- a task is drawn with a weight of `floor + signal ** sharpness`: tasks that keep showing signal are
  drawn most, tasks whose groups scored alike drop towards `floor` (never to 0: a task the model has
  since learnt or unlearnt is checked again now and then), and a task that showed signal once in a
  while, the rarely solved one, keeps a weight well above one that never did;
- a task **never played** has the weight of an even chance of signal, and besides, each draw picks
  one of them with probability `explore` while any is left (its signal is unknown, and only playing
  it tells);
- `seed_from` (samples) and `seed_measured` (an eval's count, mean and spread) start the counts from
  an offline evaluation, each task's samples as one group, so a run can begin from what `agent-env
  eval` measured instead of exploring.

Draws are made with a seeded generator: the same seed, the same scores, the same draws. The state
(`state`, `from_state`) is plain JSON, saved with a checkpoint and restored at a resumed run. The
server holds one curriculum per split (`agent_env.openenv`), so every process and every server of a
run draws from one state; this module is the policy alone, with no I/O.
"""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agent_env._errors import ArgumentError

MAX_GROUPS_KEPT = 4096
"""Groups whose scores are still taken (their rollouts may still be scored): the most recent ones."""


@dataclass(frozen=True)
class CurriculumPolicy:
    """The knobs of the draw (see the module's docstring); the defaults are the demo's, measured."""

    explore: float = 0.25
    """The chance that a draw picks a task never played, while any is left."""
    sharpness: float = 2.0
    """How strongly a task's signal sets its weight: 1 draws in proportion to it; higher favours the
    tasks most likely to give signal."""
    floor: float = 0.01
    """The least weight of a task played already: each is drawn again now and then."""
    memory: float = 0.8
    """What a task's earlier groups still count when another of its groups starts (1: all alike)."""

    def __post_init__(self) -> None:
        if not 0 <= self.explore <= 1:
            raise ArgumentError(f"explore is a chance, 0 to 1: got {self.explore}")
        if not self.sharpness > 0:
            raise ArgumentError(f"sharpness must be above 0: got {self.sharpness}")
        if not 0 < self.floor <= 1:
            raise ArgumentError(f"floor must be above 0 and at most 1: got {self.floor}")
        if not 0 < self.memory <= 1:
            raise ArgumentError(f"memory must be above 0 and at most 1: got {self.memory}")


@dataclass
class TaskRecord:
    """What one task's groups showed: every score's count, mean and spread (Welford), the recent
    groups and how many of them had signal (decayed), and when it was last drawn."""

    plays: int = 0
    mean: float = 0.0
    m2: float = 0.0
    groups: float = 0.0
    signal_groups: float = 0.0
    draws: int = 0
    last_drawn: int | None = None
    """The draw (counted from 1 over the curriculum) that last picked it; None: never."""

    @property
    def spread(self) -> float:
        """The standard deviation of its scores (0 for fewer than two)."""
        return math.sqrt(self.m2 / self.plays) if self.plays > 1 else 0.0

    @property
    def signal(self) -> float:
        """The chance that its next group's scores differ, from its recent groups."""
        return (self.signal_groups + 1.0) / (self.groups + 2.0)

    def add(self, score: float) -> None:
        self.plays += 1
        delta = score - self.mean
        self.mean += delta / self.plays
        self.m2 += delta * (score - self.mean)


@dataclass
class _Group:
    index: int
    scores: list[float] = field(default_factory=list)
    signal: bool = False


class Curriculum:
    """The draw over one split's tasks (`indices`), by `policy`, seeded."""

    def __init__(
        self, indices: Sequence[int], *, policy: CurriculumPolicy | None = None, seed: int = 0
    ) -> None:
        if not indices:
            raise ArgumentError("a curriculum needs at least one task")
        self.policy = policy or CurriculumPolicy()
        self.seed = seed
        self.tasks: dict[int, TaskRecord] = {index: TaskRecord() for index in indices}
        self.draws = 0
        self._random = random.Random(seed)
        self._groups: OrderedDict[str, _Group] = OrderedDict()

    def draw(self, group: str) -> int:
        """The task of the GRPO group `group` (a key of the client's): drawn at its first asking, the
        same one at every later asking, so each rollout of the group plays the same task."""
        known = self._groups.get(group)
        if known is not None:
            return known.index
        index = self._pick()
        self.draws += 1
        record = self.tasks[index]
        record.draws += 1
        record.last_drawn = self.draws
        record.groups *= self.policy.memory
        record.signal_groups *= self.policy.memory
        record.groups += 1.0
        self._groups[group] = _Group(index)
        while len(self._groups) > MAX_GROUPS_KEPT:
            self._groups.popitem(last=False)
        return index

    def record(self, group: str, score: float) -> bool:
        """Count one rollout's score in its group; False if the group is not one this curriculum drew
        (or one so old it is no longer kept)."""
        if not 0.0 <= score <= 1.0 or math.isnan(score):
            raise ArgumentError(f"a score is between 0 and 1: got {score}")
        known = self._groups.get(group)
        if known is None:
            return False
        record = self.tasks[known.index]
        record.add(score)
        known.scores.append(score)
        if not known.signal and max(known.scores) != min(known.scores):
            known.signal = True
            record.signal_groups += 1.0
        return True

    def seed_measured(self, index: int, plays: int, mean: float, spread: float) -> None:
        """Start a task from an evaluation's measure of it (`agent-env eval`'s results.json: its
        samples' count, mean and spread) as one group: with signal if its samples differed."""
        record = self.tasks.get(index)
        if record is None or plays < 1:
            return
        record.plays, record.mean, record.m2 = plays, mean, spread * spread * plays
        record.groups += 1.0
        record.signal_groups += float(spread > 0)

    def seed_from(self, samples: Mapping[int, Iterable[float]]) -> None:
        """Start from an evaluation's samples: each task's as one group (its scores, and whether they
        differ)."""
        for index, scores in samples.items():
            record = self.tasks.get(index)
            values = list(scores)
            if record is None or not values:
                continue
            for score in values:
                record.add(score)
            record.groups += 1.0
            record.signal_groups += float(max(values) != min(values))

    def weight(self, record: TaskRecord) -> float:
        """A task's weight in the draw (one never played: that of an even chance of signal)."""
        return self.policy.floor + float(record.signal**self.policy.sharpness)

    def table(self) -> list[dict[str, Any]]:
        """Each task's state, most drawn first: what `/metrics` and the end of a run show."""
        rows = [
            {
                "index": index,
                "plays": record.plays,
                "mean": record.mean,
                "spread": record.spread,
                "signal": record.signal,
                "draws": record.draws,
                "last_drawn": record.last_drawn,
            }
            for index, record in self.tasks.items()
        ]
        return sorted(rows, key=lambda row: (-row["draws"], row["index"]))

    def state(self) -> dict[str, Any]:
        """The whole state as JSON data: what a checkpoint keeps."""
        return {
            "policy": asdict(self.policy),
            "seed": self.seed,
            "draws": self.draws,
            "random": _random_state(self._random),
            "tasks": {str(index): asdict(record) for index, record in self.tasks.items()},
            "groups": {key: asdict(group) for key, group in self._groups.items()},
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any], indices: Sequence[int]) -> Curriculum:
        """The curriculum `state` saved, over the split's tasks now (`indices`): a task no longer
        served is dropped, a new one starts unplayed; ArgumentError if `state` is not one."""
        try:
            curriculum = cls(indices, policy=CurriculumPolicy(**state["policy"]), seed=int(state["seed"]))
            curriculum.draws = int(state["draws"])
            curriculum._random.setstate(_random_tuple(state["random"]))
            for key, saved in state["tasks"].items():
                if int(key) in curriculum.tasks:
                    curriculum.tasks[int(key)] = TaskRecord(**saved)
            for key, saved in state["groups"].items():
                if int(saved["index"]) in curriculum.tasks:
                    curriculum._groups[str(key)] = _Group(**saved)
        except (KeyError, TypeError, ValueError) as exc:
            raise ArgumentError(f"not a curriculum's saved state ({type(exc).__name__}: {exc})") from None
        return curriculum

    def _pick(self) -> int:
        unplayed = [index for index, record in self.tasks.items() if record.groups == 0]
        if unplayed and self._random.random() < self.policy.explore:
            return self._random.choice(unplayed)
        indices = list(self.tasks)
        weights = [self.weight(self.tasks[index]) for index in indices]
        return self._random.choices(indices, weights=weights)[0]


def _random_state(generator: random.Random) -> list[Any]:
    version, internal, gauss = generator.getstate()
    return [version, list(internal), gauss]


def _random_tuple(saved: Any) -> tuple[Any, ...]:
    version, internal, gauss = saved
    return (int(version), tuple(int(number) for number in internal), gauss)
