"""Which tasks to train on, by what an evaluation measured of each: the tasks whose samples differ in
score, so that their GRPO groups differ in reward and teach the model something (as prime-rl's
min/max solve rate and DAPO's dynamic sampling keep them).

Three measures of a task's samples can be bounded, alone or together (a task is kept when every
bound asked holds): `score_std`, the spread of their scores (what GRPO needs: a group whose rewards
are all alike has no advantage to learn from, partial credit or not); `mean_score`; and `pass_rate`,
the share that scored 1.0, which for all-or-nothing tasks is the mean score and sees no partial
credit (a task scoring 0.03 to 0.11 has pass rate 0).

The results are `agent-env eval -n K`'s results.json (or the `EvalResult` that `evaluate` returns);
they are read here without the evaluation's player, the server or the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent_env._errors import ArgumentError
from agent_env._specs import TaskSpec
from agent_env.training.trl._errors import EvalResultsError

if TYPE_CHECKING:
    from agent_env.eval._results import EvalResult, TaskResult

Unmeasured = Literal["error", "keep", "drop"]
"""What to do with tasks that have no measure: never evaluated, or every sample an error."""

Bounds = tuple[float | None, float | None]
"""(low, high), both included; None for no bound on that side."""

_NAMED = 10
_LABELS = {"score_std": "score spread", "mean_score": "mean score", "pass_rate": "pass rate"}
"""Each measure a selection may bound (a `TaskResult` field and the keyword that bounds it), in words."""
_EXAMPLES = {"score_std": "(0.01, None)", "mean_score": "(0.05, 0.9)", "pass_rate": "(0.1, 0.9)"}


@dataclass(frozen=True)
class Criterion:
    """One measure of a task's samples and the bounds it must lie within (None: unbounded)."""

    measure: str
    low: float | None
    high: float | None

    @property
    def label(self) -> str:
        return _LABELS[self.measure]

    def within(self) -> str:
        """The bounds in words: "within [0.1, 0.9]", "of at least 0.01", "of at most 0.5"."""
        if self.high is None:
            return f"of at least {self.low}"
        if self.low is None:
            return f"of at most {self.high}"
        return f"within [{self.low}, {self.high}]"

    def holds(self, value: float) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def value(self, task: TaskResult) -> float | None:
        value: float | None = getattr(task, self.measure)
        return value


def criteria(
    *, pass_rate: Bounds | None = None, mean_score: Bounds | None = None, score_std: Bounds | None = None
) -> list[Criterion]:
    """The bounds asked for, checked: each (low, high) within 0 and 1, low <= high, not both None."""
    asked = {"score_std": score_std, "mean_score": mean_score, "pass_rate": pass_rate}
    return [_criterion(name, bounds) for name, bounds in asked.items() if bounds is not None]


def selected(
    tasks: Sequence[TaskSpec],
    split: str,
    results: EvalResult | str | Path | None,
    *,
    score_std: Bounds | None,
    mean_score: Bounds | None,
    pass_rate: Bounds | None,
    unmeasured: Unmeasured,
    tasks_fingerprint: str | None,
) -> list[TaskSpec]:
    """`AgentEnv.dataset_for`'s selection: the split's tasks within the bounds asked of `results`' measures
    (`tasks_with_signal`), or every task when neither is given; one without the other is refused, and
    so is a selection that keeps no task."""
    asked = criteria(score_std=score_std, mean_score=mean_score, pass_rate=pass_rate)
    if bool(asked) != (results is not None):
        named = " and ".join(criterion.measure for criterion in asked) or "results"
        raise ArgumentError(
            f"{named} and bounds to select by go together: pass results=the results.json of "
            f"`agent-env eval --split {split} -n K` with score_std=(0.01, None) (the tasks whose samples "
            "differ in score), mean_score=(low, high) or pass_rate=(low, high); or none of them for "
            "every task of the split"
            if results is not None
            else f"{named} needs results=: the results.json of `agent-env eval --split {split} -n K` "
            "that measured it; or leave it out for every task of the split"
        )
    if not asked or results is None:
        return list(tasks)
    chosen = set(
        tasks_with_signal(
            results,
            score_std=score_std,
            mean_score=mean_score,
            pass_rate=pass_rate,
            tasks=tasks,
            tasks_fingerprint=tasks_fingerprint,
            unmeasured=unmeasured,
        )
    )
    if not chosen:
        raise ArgumentError(no_task_within(split, asked, results))
    return [task for task in tasks if task.index in chosen]


def tasks_with_signal(
    results: EvalResult | str | Path,
    *,
    score_std: Bounds | None = None,
    mean_score: Bounds | None = None,
    pass_rate: Bounds | None = None,
    tasks: Sequence[TaskSpec] | None = None,
    tasks_fingerprint: str | None = None,
    unmeasured: Unmeasured = "error",
) -> list[int]:
    """The indices, in order, of the tasks whose measures lie within the bounds asked, each (low,
    high) with both bounds included and None for no bound on that side; given several, a task is kept
    when all hold:

    - `score_std=(0.01, None)`: the tasks whose samples' scores differ (their population standard
      deviation, results.json's `score_std`, is at least 0.01): GRPO's groups of them carry signal,
      partial credit included;
    - `mean_score=(0.05, 0.9)`: the tasks whose mean score lies within the bounds;
    - `pass_rate=(0.1, 0.9)`: the tasks solved (scored 1.0) in 10% to 90% of their samples.

    `results` is a results.json (or the folder `agent-env eval --out` wrote it to), or an `EvalResult`;
    results.json written before `score_std` was recorded can select by `pass_rate` and `mean_score`
    only (an `EvalResultsError` says to evaluate again). `tasks` are the split's tasks as the server
    lists them (`TaskAPI.tasks`), and `tasks_fingerprint` the server's: given, the results must be of
    that split and fingerprint, else an `EvalResultsError` naming both; without them, the results' own
    tasks are the split's. A task without a measure (never evaluated, or every sample an error) is, by
    `unmeasured`: an `EvalResultsError` naming it ("error"), kept ("keep") or left out ("drop").
    """
    asked = criteria(score_std=score_std, mean_score=mean_score, pass_rate=pass_rate)
    if not asked:
        raise ArgumentError(
            "tasks_with_signal needs bounds to select by: score_std=(0.01, None) keeps the tasks whose "
            "samples differ in score, mean_score=(low, high) or pass_rate=(low, high) those within them"
        )
    found = read_results(results)
    where = f"the eval results at {results}" if isinstance(results, str | Path) else "the eval results given"
    if tasks_fingerprint is not None and found.tasks_fingerprint != tasks_fingerprint:
        theirs = found.tasks_fingerprint or "none recorded (an older agent-env eval)"
        raise EvalResultsError(
            f"{where} measured other tasks than the server serves: their tasks fingerprint is {theirs}, "
            f"the server's {tasks_fingerprint} (another bundle, or the bundle changed since): evaluate "
            f"the tasks served now (`agent-env eval BUNDLE_OR_URL --split {found.split} -n K --out "
            f"FOLDER`) and pass FOLDER/results.json"
        )
    _check_recorded(found, asked, where)
    measured = {task.index: task for task in found.tasks}
    if tasks is None:
        split, served = found.split, [(index, measured[index].id) for index in sorted(measured)]
    else:
        split, served = _split_of(tasks, found.split), [(task.index, task.id) for task in tasks]
    if split != found.split:
        raise EvalResultsError(
            f"{where} are of split '{found.split}', not '{split}': evaluate split '{split}' "
            f"(`agent-env eval ... --split {split} -n K --out FOLDER`) and pass its results.json"
        )
    stray = [
        f"{index} ({measured[index].id} there, {task_id} here)"
        for index, task_id in served
        if index in measured and measured[index].id != task_id
    ]
    if stray:
        raise EvalResultsError(
            f"{where} name other tasks at the indices of split '{split}': {_listed(stray)}: evaluate the "
            f"tasks served now and pass those results"
        )
    chosen: list[int] = []
    unrated: list[str] = []
    for index, task_id in served:
        values = _values(measured[index], asked) if index in measured else None
        if values is None:
            unrated.append(task_id if index in measured else f"{task_id} (never evaluated)")
            if unmeasured == "keep":
                chosen.append(index)
        elif all(criterion.holds(value) for criterion, value in zip(asked, values, strict=True)):
            chosen.append(index)
    if unrated and unmeasured == "error":
        count = f"{len(unrated)} tasks have" if len(unrated) != 1 else "1 task has"
        labels = " or ".join(criterion.label for criterion in asked)
        raise EvalResultsError(
            f"{count} no {labels} for split '{split}' in {where} (never evaluated, or every sample an "
            f"error of the model's side): {_listed(unrated)}; evaluate them again, or pass "
            "unmeasured='keep' to train on them too, or 'drop' to leave them out"
        )
    return chosen


def no_task_within(split: str, asked: Sequence[Criterion], results: EvalResult | str | Path) -> str:
    """Why no task was chosen: how many measured tasks fall below and above each bound asked."""
    rated = [values for task in read_results(results).tasks if (values := _values(task, asked)) is not None]
    wanted = " and ".join(f"a {criterion.label} {criterion.within()}" for criterion in asked)
    counts = []
    for column, criterion in enumerate(asked):
        below = sum(1 for values in rated if criterion.low is not None and values[column] < criterion.low)
        above = sum(1 for values in rated if criterion.high is not None and values[column] > criterion.high)
        counts.append((criterion, below, above))
    if len(counts) == 1:
        _, below, above = counts[0]
        why = f"{below} of its {len(rated)} measured tasks below, {above} above"
    else:
        each = "; ".join(f"{c.measure}: {below} below, {above} above" for c, below, above in counts)
        why = f"of its {len(rated)} measured tasks, {each}"
    widen = " or ".join(criterion.measure for criterion in asked)
    return f"no task of split '{split}' has {wanted} ({why}): widen {widen}, or train on the split as it is"


def _values(task: TaskResult, asked: Sequence[Criterion]) -> list[float] | None:
    """The task's value of each measure asked; None when it has none (every sample an error)."""
    values = [criterion.value(task) for criterion in asked]
    return None if any(value is None for value in values) else [v for v in values if v is not None]


def _check_recorded(found: EvalResult, asked: Sequence[Criterion], where: str) -> None:
    """Results written before a measure was recorded lack it where a task was played: refused, as
    "no measure" would drop (or keep) every task for a reason that is not the model's."""
    for criterion in asked:
        if any(task.mean_score is not None and criterion.value(task) is None for task in found.tasks):
            raise EvalResultsError(
                f"{where} hold no {criterion.measure} (the {criterion.label}): they were written by an "
                f"agent-env eval older than that measure; evaluate again (`agent-env eval BUNDLE_OR_URL "
                f"--split {found.split} -n K --out FOLDER`) and pass FOLDER/results.json"
            )


def read_results(results: EvalResult | str | Path) -> EvalResult:
    """An eval's results: `results` itself, or the results.json at that path."""
    from agent_env.eval._results import EvalResult

    return results if isinstance(results, EvalResult) else EvalResult.read(results)


def _criterion(measure: str, bounds: Bounds) -> Criterion:
    shape = f"{measure} must be (low, high), each a number from 0 to 1 or None for no bound"
    try:
        low, high = (None if bound is None else float(bound) for bound in bounds)
    except (TypeError, ValueError):
        raise ArgumentError(f"{shape}, got {bounds!r}") from None
    if low is None and high is None:
        raise ArgumentError(
            f"{measure}=(None, None) bounds nothing: give a low, a high or both, e.g. {measure}="
            f"{_EXAMPLES[measure]}, or leave {measure} out"
        )
    if any(bound is not None and not 0.0 <= bound <= 1.0 for bound in (low, high)):
        raise ArgumentError(f"{shape}, got {bounds!r}: a score, its mean and its spread lie within [0, 1]")
    if low is not None and high is not None and low > high:
        raise ArgumentError(
            f"{measure} must be (low, high) with low <= high, got {bounds!r}: swap them, "
            f"{measure}=({high}, {low})"
        )
    return Criterion(measure, low, high)


def _split_of(tasks: Sequence[TaskSpec], default: str) -> str:
    return tasks[0].split if tasks else default


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")
