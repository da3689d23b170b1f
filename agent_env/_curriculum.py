"""An online curriculum: which task a GRPO group plays next, from the scores groups got so far.

GRPO learns only from a group whose rollouts scored differently; a group that all scored alike (all
solved, all failed) costs a batch's compute and teaches nothing. The offline answer is to sample each
task before training and keep the ones with a pass rate between two bounds; it misses the tasks a
model solves rarely (one sample in twenty mostly shows 0 of 8), and it cannot follow the model as it
learns. The online answer (DAPO's dynamic sampling, prime-rl's difficulty pools, TRL#3708) is to draw
each group's task from what the groups of each task showed recently:

- a task's **signal** is the chance that its next group's scores differ, `1 - sum(f ** n)` over the
  scores it got (`f`, each distinct score's share of its plays; `n`, the group's size): the chance
  that `n` draws from its scores all come out alike, taken from 1. Each share is of the plays plus
  `unseen`, the weight of a score not seen yet, so a task whose plays all scored alike keeps a
  little signal rather than none. The counts are decayed by `memory` each time another group of the
  task starts (recent groups count most, as the model changes). It holds for partial credit as for
  pass/fail: a task that always scores 0.75 has none; one solved once in twenty has some;
- a task is drawn with a weight of `floor + signal ** sharpness`: tasks whose scores differ most
  often are drawn most, tasks whose groups scored alike drop towards `floor` (never to 0: a task
  the model has since learnt or unlearnt is checked again now and then), and a task solved rarely
  keeps a weight well above one always or never solved;
- a task **never played** has the weight of an even chance of signal, and besides, each draw picks
  one of them with probability `explore` while any is left (its signal is unknown, and only playing
  it tells);
- `seed_from` (samples) and `seed_measured` (an eval's count, mean, spread, lowest and highest) start
  the counts from an offline evaluation, so a run can begin from what `agent-env eval` measured
  instead of exploring.

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
MAX_GROUP_SCORES = 1024
"""The most scores one group takes: its rollouts' (TRL's `num_generations` is far below)."""
FORGOTTEN = 0.01
"""A score whose decayed count falls below this is dropped from a task's recent plays."""
DEFAULT_GROUP_SIZE = 8
"""A group's size until a group's scores show it (TRL's default `num_generations`)."""
UNPLAYED_SIGNAL = 0.5
"""The signal of a task with no score yet: an even chance."""


@dataclass(frozen=True)
class CurriculumPolicy:
    """The knobs of the draw (see the module's docstring); the defaults are the demo's, measured."""

    explore: float = 0.25
    """The chance that a draw picks a task never played, while any is left."""
    sharpness: float = 4.0
    """How strongly a task's signal sets its weight: 1 draws in proportion to it; higher favours the
    tasks most likely to give signal."""
    floor: float = 0.001
    """The least weight of a task played already: each is drawn again now and then."""
    memory: float = 0.8
    """What a task's earlier groups still count when another of its groups starts (1: all alike)."""
    unseen: float = 0.1
    """The weight, in plays, of a score a task has not given yet: how much doubt a task whose plays
    all scored alike keeps that its next group will differ."""

    def __post_init__(self) -> None:
        if not 0 <= self.explore <= 1:
            raise ArgumentError(f"explore is a chance, 0 to 1: got {self.explore}")
        if not self.sharpness > 0:
            raise ArgumentError(f"sharpness must be above 0: got {self.sharpness}")
        if not 0 < self.floor <= 1:
            raise ArgumentError(f"floor must be above 0 and at most 1: got {self.floor}")
        if not 0 < self.memory <= 1:
            raise ArgumentError(f"memory must be above 0 and at most 1: got {self.memory}")
        if not self.unseen > 0:
            raise ArgumentError(f"unseen must be above 0: got {self.unseen}")


@dataclass
class TaskRecord:
    """What one task's groups showed: every score's count, mean and spread (Welford), its recent plays
    by score (decayed: `counts`), how often it was drawn and when last."""

    plays: int = 0
    mean: float = 0.0
    m2: float = 0.0
    counts: dict[str, float] = field(default_factory=dict)
    """Recent plays by score (the score as text, to six places), decayed as its groups start."""
    draws: int = 0
    last_drawn: int | None = None
    """The draw (counted from 1 over the curriculum) that last picked it; None: never."""

    @property
    def spread(self) -> float:
        """The standard deviation of its scores (0 for fewer than two)."""
        return math.sqrt(self.m2 / self.plays) if self.plays > 1 else 0.0

    def add(self, score: float) -> None:
        """Count one play's score: in the mean and spread, and as a recent play."""
        self.plays += 1
        delta = score - self.mean
        self.mean += delta / self.plays
        self.m2 += delta * (score - self.mean)
        self.count(score, 1.0)

    def count(self, score: float, plays: float) -> None:
        """Count `score` as `plays` recent plays (a share of a measure's, perhaps)."""
        key = f"{score:.6f}"
        self.counts[key] = self.counts.get(key, 0.0) + plays

    def signal(self, group_size: int, unseen: float) -> float:
        """The chance that a group of `group_size` differs: 1 less the chance that all its scores come
        out alike, each score as likely as its share of the recent plays plus `unseen`."""
        recent = sum(self.counts.values())
        if recent == 0:
            return UNPLAYED_SIGNAL
        return 1.0 - sum((count / (recent + unseen)) ** group_size for count in self.counts.values())


@dataclass
class _Group:
    index: int
    scored: int = 0


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
        self.group_size = DEFAULT_GROUP_SIZE
        """The most scores a group of this run got: the size the signal is reckoned for."""
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
        decayed = ((score, count * self.policy.memory) for score, count in record.counts.items())
        record.counts = {score: count for score, count in decayed if count >= FORGOTTEN}
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
        if known.scored >= MAX_GROUP_SCORES:
            raise ArgumentError(f"group '{group}' has the {MAX_GROUP_SCORES} scores a group takes")
        self.tasks[known.index].add(score)
        known.scored += 1
        self.group_size = max(self.group_size, known.scored)
        return True

    def seed_measured(
        self,
        index: int,
        plays: int,
        mean: float,
        spread: float,
        low: float | None = None,
        high: float | None = None,
    ) -> None:
        """Start a task from an evaluation's measure of it (`agent-env eval`'s results.json: its
        samples' count, mean, spread, lowest and highest): its plays as split between the lowest and
        the highest score so that their mean is `mean` (exact for pass/fail scores)."""
        record = self.tasks.get(index)
        if record is None or plays < 1:
            return
        record.plays, record.mean, record.m2 = plays, mean, spread * spread * plays
        low = max(0.0, mean - spread) if low is None else low
        high = min(1.0, mean + spread) if high is None else high
        if high - low <= 0 or spread == 0:
            record.count(mean, float(plays))
            return
        share_high = min(1.0, max(0.0, (mean - low) / (high - low)))
        record.count(high, plays * share_high)
        record.count(low, plays * (1.0 - share_high))

    def seed_from(self, samples: Mapping[int, Iterable[float]]) -> None:
        """Start from an evaluation's samples: each task's scores, as played."""
        for index, scores in samples.items():
            record = self.tasks.get(index)
            if record is None:
                continue
            for score in scores:
                record.add(score)

    def signal(self, record: TaskRecord) -> float:
        """The chance that the task's next group differs (`TaskRecord.signal`, at this run's group
        size)."""
        return record.signal(self.group_size, self.policy.unseen)

    def weight(self, record: TaskRecord) -> float:
        """A task's weight in the draw (one never played: that of an even chance of signal)."""
        return self.policy.floor + float(self.signal(record) ** self.policy.sharpness)

    def table(self) -> list[dict[str, Any]]:
        """Each task's state, most drawn first: what `/metrics` and the end of a run show."""
        rows = [
            {
                "index": index,
                "plays": record.plays,
                "mean": record.mean,
                "spread": record.spread,
                "signal": self.signal(record),
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
            "group_size": self.group_size,
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
            curriculum.group_size = int(state["group_size"])
            if not 1 <= curriculum.group_size <= MAX_GROUP_SCORES:
                raise ArgumentError(f"group_size {curriculum.group_size} is not 1 to {MAX_GROUP_SCORES}")
            curriculum._random.setstate(_random_tuple(state["random"]))
            for key, saved in state["tasks"].items():
                if int(key) in curriculum.tasks:
                    curriculum.tasks[int(key)] = _checked(TaskRecord(**saved))
            for key, saved in state["groups"].items():
                if int(saved["index"]) in curriculum.tasks:
                    curriculum._groups[str(key)] = _Group(**saved)
        except (KeyError, TypeError, ValueError) as exc:
            raise ArgumentError(f"not a curriculum's saved state ({type(exc).__name__}: {exc})") from None
        return curriculum

    def _pick(self) -> int:
        unplayed = [index for index, record in self.tasks.items() if not record.draws and not record.counts]
        if unplayed and self._random.random() < self.policy.explore:
            return self._random.choice(unplayed)
        indices = list(self.tasks)
        weights = [self.weight(self.tasks[index]) for index in indices]
        return self._random.choices(indices, weights=weights)[0]


def _checked(record: TaskRecord) -> TaskRecord:
    """`record` if its recent plays are counts (numbers, 0 or more, finite); ArgumentError if not."""
    for score, count in record.counts.items():
        if not isinstance(count, int | float) or not 0 <= count < math.inf:
            raise ArgumentError(f"the count of score {score!r} is not a number of plays: {count!r}")
    return record


def _random_state(generator: random.Random) -> list[Any]:
    version, internal, gauss = generator.getstate()
    return [version, list(internal), gauss]


def _random_tuple(saved: Any) -> tuple[Any, ...]:
    version, internal, gauss = saved
    return (int(version), tuple(int(number) for number in internal), gauss)
