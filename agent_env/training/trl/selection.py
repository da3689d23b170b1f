"""Which tasks to train on, by the pass rates an evaluation measured: the tasks a model sometimes
solves, whose GRPO groups differ in reward and so teach it something (as prime-rl's min/max solve
rate and DAPO's dynamic sampling keep them).

The results are `agent-env eval -n K`'s results.json (or the `EvalResult` that `evaluate` returns);
they are read here without the evaluation's player, the server or the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent_env._errors import ArgumentError
from agent_env.specs import TaskSpec
from agent_env.training.trl.errors import EvalResultsError

if TYPE_CHECKING:
    from agent_env.eval.results import EvalResult

Unmeasured = Literal["error", "keep", "drop"]
"""What to do with tasks that have no pass rate: never evaluated, or every sample an error."""

_NAMED = 10


def tasks_with_signal(
    results: EvalResult | str | Path,
    *,
    pass_rate: tuple[float, float],
    tasks: Sequence[TaskSpec] | None = None,
    tasks_fingerprint: str | None = None,
    unmeasured: Unmeasured = "error",
) -> list[int]:
    """The indices, in order, of the tasks whose pass rate lies within `pass_rate` (low, high), both
    bounds included: `(0.1, 0.9)` keeps the tasks solved in 10% to 90% of their samples.

    `results` is a results.json (or the folder `agent-env eval --out` wrote it to), or an `EvalResult`.
    `tasks` are the split's tasks as the server lists them (`TaskAPI.tasks`), and `tasks_fingerprint`
    the server's: given, the results must be of that split and fingerprint, else an
    `EvalResultsError` naming both; without them, the results' own tasks are the split's. A task
    without a pass rate (never evaluated, or every sample an error) is, by `unmeasured`: an
    `EvalResultsError` naming it ("error"), kept ("keep") or left out ("drop").
    """
    low, high = _bounds(pass_rate)
    found = _read(results)
    where = f"the eval results at {results}" if isinstance(results, str | Path) else "the eval results given"
    if tasks_fingerprint is not None and found.tasks_fingerprint != tasks_fingerprint:
        measured = found.tasks_fingerprint or "none recorded (an older agent-env eval)"
        raise EvalResultsError(
            f"{where} measured other tasks than the server serves: their tasks fingerprint is {measured}, "
            f"the server's {tasks_fingerprint} (another bundle, or the bundle changed since): evaluate "
            f"the tasks served now (`agent-env eval BUNDLE_OR_URL --split {found.split} -n K --out "
            f"FOLDER`) and pass FOLDER/results.json"
        )
    rates = {task.index: (task.id, task.pass_rate) for task in found.tasks}
    if tasks is None:
        split, served = found.split, [(index, task_id) for index, (task_id, _) in sorted(rates.items())]
    else:
        split, served = _split_of(tasks, found.split), [(task.index, task.id) for task in tasks]
    if split != found.split:
        raise EvalResultsError(
            f"{where} are of split '{found.split}', not '{split}': evaluate split '{split}' "
            f"(`agent-env eval ... --split {split} -n K --out FOLDER`) and pass its results.json"
        )
    stray = [
        f"{index} ({rates[index][0]} there, {task_id} here)"
        for index, task_id in served
        if index in rates and rates[index][0] != task_id
    ]
    if stray:
        raise EvalResultsError(
            f"{where} name other tasks at the indices of split '{split}': {_listed(stray)}: evaluate the "
            f"tasks served now and pass those results"
        )
    chosen: list[int] = []
    unrated: list[str] = []
    for index, task_id in served:
        rate = rates.get(index, (task_id, None))[1]
        if rate is None:
            unrated.append(task_id if index in rates else f"{task_id} (never evaluated)")
            if unmeasured == "keep":
                chosen.append(index)
        elif low <= rate <= high:
            chosen.append(index)
    if unrated and unmeasured == "error":
        count = f"{len(unrated)} tasks have" if len(unrated) != 1 else "1 task has"
        raise EvalResultsError(
            f"{count} no pass rate for split '{split}' in {where} (never evaluated, or every sample an "
            f"error of the model's side): {_listed(unrated)}; evaluate them again, or pass "
            "unmeasured='keep' to train on them too, or 'drop' to leave them out"
        )
    return chosen


def no_task_within(split: str, pass_rate: tuple[float, float], results: EvalResult | str | Path) -> str:
    """Why no task was chosen: how many measured tasks fall below and above the bounds."""
    low, high = _bounds(pass_rate)
    rates = [task.pass_rate for task in _read(results).tasks if task.pass_rate is not None]
    below, above = sum(1 for r in rates if r < low), sum(1 for r in rates if r > high)
    return (
        f"no task of split '{split}' has a pass rate within [{low}, {high}] ({below} of its {len(rates)} "
        f"measured tasks below, {above} above): widen pass_rate, or train on the split as it is"
    )


def _read(results: EvalResult | str | Path) -> EvalResult:
    from agent_env.eval.results import EvalResult

    return results if isinstance(results, EvalResult) else EvalResult.read(results)


def _bounds(pass_rate: tuple[float, float]) -> tuple[float, float]:
    try:
        low, high = (float(bound) for bound in pass_rate)
    except (TypeError, ValueError):
        raise ArgumentError(f"pass_rate must be (low, high), two numbers, got {pass_rate!r}") from None
    if not 0.0 <= low <= high <= 1.0:
        raise ArgumentError(f"pass_rate must be (low, high) with 0 <= low <= high <= 1, got {pass_rate!r}")
    return low, high


def _split_of(tasks: Sequence[TaskSpec], default: str) -> str:
    return tasks[0].split if tasks else default


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")
