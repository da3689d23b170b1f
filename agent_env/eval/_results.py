"""What an evaluation found: per task and in total, as the table shows it and results.json holds it.

A sample passes when its score is 1.0. Samples that are errors (the model's endpoint failed) are
counted apart and left out of the means, the spread, the pass rate and pass@k, which are over the
samples that were played. A task's spread is the population standard deviation of the scores its
mean is of: what tells a task whose samples differ (GRPO's groups carry signal) from one whose
samples all score alike, partial credit included, where a pass rate sees only the 1.0s.

results.json carries the server's `tasks_fingerprint`, so that what it says can be matched to the
tasks it measured (the trainer's `tasks_with_signal`). Reading it loads no part of the engine or the
server: the trainer's side reads it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field

from agent_env._errors import ArgumentError
from agent_env._table import table
from agent_env._trajectory import Trajectory
from agent_env.eval._passk import pass_at_k

PASS_SCORE = 1.0


class TaskResult(BaseModel):
    """One task's samples: how many, how many passed, were errors or failed on the server; their scores'
    mean and spread."""

    model_config = ConfigDict(frozen=True)

    split: str
    index: int
    id: str
    samples: int
    scored: int = Field(description="Samples that ended with a score.")
    passed: int = Field(description="Samples scored 1.0.")
    errors: int = Field(description="Samples the model's endpoint failed, past its retries: never scored.")
    failed: int = Field(description="Samples whose episode failed on the server (unscored).")
    mean_score: float | None = Field(description="Over the samples played (errors left out); failed count 0.")
    score_std: float | None = Field(
        default=None,
        description="The population standard deviation of the scores `mean_score` is of (0.0 for one "
        "sample, or when all score alike); None when no sample was played, or in results written before "
        "it was recorded. What `tasks_with_signal(score_std=...)` selects by.",
    )
    min_score: float | None = Field(
        default=None, description="The lowest of those scores; None as for score_std."
    )
    max_score: float | None = Field(
        default=None, description="The highest of those scores; None as for score_std."
    )
    pass_at_1: float | None
    pass_at_k: float | None = Field(description="k = the samples played (errors left out).")
    seconds: float | None = Field(
        default=None,
        description="The mean time of its samples, from the reset to the score (the model's answers "
        "included); None in results written before it was recorded.",
    )

    @computed_field(  # type: ignore[prop-decorator]
        description="The share of the samples played (errors left out) that passed; None when every "
        "sample was an error. What `tasks_with_signal(pass_rate=...)` selects by."
    )
    @property
    def pass_rate(self) -> float | None:
        played = self.samples - self.errors
        return self.passed / played if played else None


class EvalResult(BaseModel):
    """Every task's result, the totals, and how the evaluation was run; results.json is this."""

    model_config = ConfigDict(frozen=True)

    model: str | None
    split: str
    tasks_fingerprint: str | None = Field(
        default=None,
        description="The server's `tasks_fingerprint` (its tasks, their scoring and the bundle's files): "
        "which tasks these results are of. None in results written before it was recorded.",
    )
    settings: dict[str, Any]
    tasks: list[TaskResult]
    samples: int
    errors: int
    failed: int
    mean_score: float | None
    pass_at_1: float | None
    pass_at_k: float | None
    trajectories: list[Trajectory] = Field(default_factory=list, exclude=True)

    @classmethod
    def read(cls, path: str | Path) -> EvalResult:
        """The results `agent-env eval --out` wrote: its results.json, or the folder that holds it."""
        path = Path(path)
        file = path / "results.json" if path.is_dir() else path
        try:
            return cls.model_validate_json(file.read_bytes())
        except FileNotFoundError:
            raise FileNotFoundError(
                f"no eval results at {file}: write them with `agent-env eval BUNDLE --model MODEL -n K "
                f"--out FOLDER`, then pass FOLDER/results.json"
            ) from None
        except ValidationError as exc:
            raise ArgumentError(
                f"{file} is not the results.json of `agent-env eval` ({exc.error_count()} problems, the "
                f"first: {exc.errors()[0]['msg']}): pass the one `agent-env eval --out` wrote"
            ) from None

    def table(self) -> str:
        """One row per task, then the totals."""
        header = (
            "index",
            "id",
            "samples",
            "mean",
            "std",
            "min",
            "max",
            "pass@1",
            "pass@k",
            "errors",
            "failed",
            "seconds",
        )
        rows: list[Sequence[object]] = [
            (
                t.index,
                t.id,
                t.samples,
                t.mean_score,
                t.score_std,
                t.min_score,
                t.max_score,
                *_rates(t),
                t.seconds,
            )
            for t in self.tasks
        ]
        # std, min and max are each task's own: across tasks they would select nothing
        totals = (self.samples, self.mean_score, None, None, None, self.pass_at_1, self.pass_at_k)
        rows.append(("all", f"{len(self.tasks)} tasks", *totals, self.errors, self.failed, None))
        return table(header, rows)


def task_result(trajectories: Sequence[Trajectory]) -> TaskResult:
    """The result of one task's samples (all of one task)."""
    task = trajectories[0].task
    played = [t for t in trajectories if t.outcome.kind != "error"]
    scores = [t.score if t.score is not None else 0.0 for t in played]
    passed = sum(1 for s in scores if s >= PASS_SCORE)
    n = len(played)
    return TaskResult(
        split=task.split,
        index=task.index,
        id=task.id,
        samples=len(trajectories),
        scored=sum(1 for t in played if t.outcome.kind == "scored"),
        passed=passed,
        errors=len(trajectories) - n,
        failed=sum(1 for t in played if t.outcome.kind != "scored"),
        mean_score=sum(scores) / n if n else None,
        score_std=statistics.pstdev(scores) if n else None,
        min_score=min(scores) if n else None,
        max_score=max(scores) if n else None,
        pass_at_1=pass_at_k(n, passed, 1) if n else None,
        pass_at_k=pass_at_k(n, passed, n) if n else None,
        seconds=_mean([t.timings.total_s for t in trajectories]),
    )


def eval_result(
    trajectories: Sequence[Trajectory],
    *,
    model: str | None,
    split: str,
    settings: dict[str, Any],
    tasks_fingerprint: str | None = None,
) -> EvalResult:
    """Every task's result (in task order) and the totals: means of the tasks' pass@1 and pass@k,
    and the mean score over every sample played."""
    by_task: dict[int, list[Trajectory]] = {}
    for trajectory in trajectories:
        by_task.setdefault(trajectory.task.index, []).append(trajectory)
    tasks = [task_result(by_task[index]) for index in sorted(by_task)]
    played = [t for t in trajectories if t.outcome.kind != "error"]
    scores = [t.score if t.score is not None else 0.0 for t in played]
    rated = [t for t in tasks if t.pass_at_1 is not None]
    return EvalResult(
        model=model,
        split=split,
        tasks_fingerprint=tasks_fingerprint,
        settings=settings,
        tasks=tasks,
        samples=len(trajectories),
        errors=len(trajectories) - len(played),
        failed=sum(t.failed for t in tasks),
        mean_score=sum(scores) / len(scores) if scores else None,
        pass_at_1=_mean([t.pass_at_1 for t in rated]),
        pass_at_k=_mean([t.pass_at_k for t in rated]),
        trajectories=list(trajectories),
    )


def _rates(task: TaskResult) -> tuple[float | None, float | None, int, int]:
    return task.pass_at_1, task.pass_at_k, task.errors, task.failed


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None
