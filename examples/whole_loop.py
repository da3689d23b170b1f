"""The loop around GRPO that `train_grpo.py` and `train_async_grpo.py` both run when asked to:

1. sample each task of the train split K times (temperature > 0): results.json with its pass rate
   and the spread of its scores;
2. keep the tasks whose pass rate lies within [LOW, HIGH], or whose scores' spread is at least MIN
   (partial credit included), or both: those whose GRPO groups differ in reward;
3. (the script) train on them, with `GroupsWithSignal` where the rewards are in its process;
4. score the held-out split, greedy, before and after training: a table of the two.

Steps 1 and 4 are `agent_env.eval.evaluate` and step 2 is `AgentEnv.dataset_for`, with a policy the
script makes of its model as it is at that step. Every evaluation writes its trajectories and its
results.json under `--eval-out`: `pass-rates/`, `before/`, `after/`. A sample the model's side failed
(an error, never scored) stops the loop: its pass rates or scores would not be the model's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_env.eval import EvalResult, PlaySettings, Policy
    from agent_env.training.trl import AgentEnv

DEFAULT_SAMPLES = 8
DEFAULT_TEMPERATURE = 1.0
DEFAULT_EVAL_OUT = "runs/eval"
PASS_RATES, BEFORE, AFTER = "pass-rates", "before", "after"

PolicyAt = Callable[[float], "Policy"]
"""A policy of the model as it is now, sampling at the temperature given (0: greedy)."""


@dataclass(frozen=True)
class LoopPlan:
    """Which of the loop's steps to run: none by default, so a script trains as it always did."""

    pass_rate: tuple[float, float] | None = None
    score_std: float | None = None
    samples: int = DEFAULT_SAMPLES
    temperature: float = DEFAULT_TEMPERATURE
    eval_split: str | None = None
    out: Path = Path(DEFAULT_EVAL_OUT)

    @property
    def selects(self) -> bool:
        """Whether the train split is sampled first, to train only on the tasks with signal."""
        return self.pass_rate is not None or self.score_std is not None

    @property
    def evaluates(self) -> bool:
        """Whether any step plays the model outside training."""
        return self.selects or self.eval_split is not None


def add_loop_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the whole loop (README: On a GPU: the whole loop)")
    group.add_argument(
        "--select-by-pass-rate",
        nargs=2,
        type=float,
        metavar=("LOW", "HIGH"),
        help="sample the train split first and train only on the tasks whose pass rate lies within "
        "[LOW, HIGH], e.g. 0.1 0.9",
    )
    group.add_argument(
        "--select-by-score-std",
        type=float,
        metavar="MIN",
        help="sample the train split first and train only on the tasks whose samples' scores have a "
        "population standard deviation of at least MIN, e.g. 0.01: those whose samples differ, partial "
        "credit included (with --select-by-pass-rate too: both must hold)",
    )
    group.add_argument(
        "--samples", type=int, help=f"samples per train task for the pass rates (default: {DEFAULT_SAMPLES})"
    )
    group.add_argument(
        "--sample-temperature",
        type=float,
        help=f"the temperature of those samples (default: {DEFAULT_TEMPERATURE})",
    )
    group.add_argument(
        "--eval-split", help="score this held-out split, greedy, before and after training (e.g. eval)"
    )
    group.add_argument(
        "--eval-out",
        default=DEFAULT_EVAL_OUT,
        help=f"where each evaluation writes results.json and trajectories (default: {DEFAULT_EVAL_OUT})",
    )


def loop_plan(parser: argparse.ArgumentParser, options: argparse.Namespace) -> LoopPlan:
    """The steps the flags ask for; flags that cannot work together are the parser's error (exit 2)."""
    band, spread = options.select_by_pass_rate, options.select_by_score_std
    sampling = options.samples is not None or options.sample_temperature is not None
    if band is None and spread is None and sampling:
        parser.error(
            "--samples and --sample-temperature set how --select-by-pass-rate or --select-by-score-std "
            "samples: pass one of them too"
        )
    if band is not None and not 0.0 <= band[0] <= band[1] <= 1.0:
        parser.error(f"--select-by-pass-rate LOW HIGH needs 0 <= LOW <= HIGH <= 1, got {band[0]} {band[1]}")
    if spread is not None and not 0.0 <= spread <= 1.0:
        parser.error(f"--select-by-score-std MIN needs 0 <= MIN <= 1 (e.g. 0.01), got {spread}")
    samples = DEFAULT_SAMPLES if options.samples is None else options.samples
    if samples < 2:
        parser.error(f"--samples must be at least 2 (a pass rate of one sample is 0 or 1), got {samples}")
    temperature = DEFAULT_TEMPERATURE if options.sample_temperature is None else options.sample_temperature
    if temperature <= 0:
        parser.error(
            f"--sample-temperature must be > 0 (greedy samples of a task are one play), got {temperature}"
        )
    return LoopPlan(
        pass_rate=None if band is None else (band[0], band[1]),
        score_std=spread,
        samples=samples,
        temperature=temperature,
        eval_split=options.eval_split,
        out=Path(options.eval_out).resolve(),
    )


@dataclass
class Loop:
    """One run's steps on the server at `target`, and the held-out scores they measured."""

    plan: LoopPlan
    target: str
    settings: PlaySettings
    model: str | None
    concurrency: int
    scores: list[tuple[str, float | None]] = field(default_factory=list)

    def train_dataset(self, env: AgentEnv, policy_at: PolicyAt) -> Any:
        """Steps 1 and 2: the rows of the tasks with signal, or every task of the split without bounds."""
        plan = self.plan
        if not plan.selects:
            return env.dataset
        from agent_env.eval import RESULTS_FILE

        policy = policy_at(plan.temperature)
        sampled = self._evaluate(PASS_RATES, policy, env.split, plan.samples, self.model)
        results = plan.out / PASS_RATES / RESULTS_FILE
        spread = None if plan.score_std is None else (plan.score_std, None)
        try:
            dataset = env.dataset_for(env.split, results=results, pass_rate=plan.pass_rate, score_std=spread)
        except ValueError as exc:  # none within the bounds, or results of other tasks: what to do
            raise SystemExit(f"{PASS_RATES}: {exc}") from None
        wanted = []
        if plan.pass_rate is not None:
            wanted.append(f"a pass rate within [{plan.pass_rate[0]}, {plan.pass_rate[1]}]")
        if plan.score_std is not None:
            wanted.append(f"a score spread of at least {plan.score_std}")
        print(
            f"kept {len(dataset)} of {len(sampled.tasks)} {env.split} tasks, those with "
            f"{' and '.join(wanted)} over {plan.samples} samples at temperature {plan.temperature} "
            f"({results})",
            flush=True,
        )
        return dataset

    def score(self, stage: str, policy_at: PolicyAt, *, model: str | None = None) -> None:
        """Step 4: the held-out split's greedy mean score, kept for the table; `model` names what
        played in its results.json, if not the loop's model."""
        if self.plan.eval_split is None:
            return
        result = self._evaluate(stage, policy_at(0.0), self.plan.eval_split, 1, model or self.model)
        self.scores.append((stage, result.mean_score))
        print(f"{stage}: {self.plan.eval_split} split, greedy: {_score(result.mean_score)}", flush=True)

    def table(self) -> str | None:
        """The held-out score of each stage, one row each; None when no split was held out."""
        if self.plan.eval_split is None:
            return None
        rows = [f"{'stage':<8} {self.plan.eval_split + ' split':>12}"]
        rows += [f"{stage:<8} {_score(score):>12}" for stage, score in self.scores]
        return "\n".join(rows)

    def _evaluate(
        self, stage: str, policy: Policy, split: str, samples: int, model: str | None
    ) -> EvalResult:
        from agent_env.eval import evaluate

        each = f"{samples} samples of each task" if samples > 1 else "each task once"
        print(f"{stage}: playing the {split} split, {each} ...", flush=True)
        try:
            result = evaluate(
                self.target,
                policy,
                split=split,
                samples=samples,
                concurrency=self.concurrency,
                settings=self.settings,
                model=model,
                out=self.plan.out / stage,
            )
        finally:
            if callable(close := getattr(policy, "close", None)):
                close()  # one policy per evaluation: an endpoint's connections end with it
        if result.errors:
            first = next(t.outcome.reason for t in result.trajectories if t.outcome.kind == "error")
            raise SystemExit(
                f"{stage}: {result.errors} of {result.samples} samples failed on the model's side, so these "
                f"scores are not the model's; the first: {first}"
            )
        return result


def _score(score: float | None) -> str:
    return "-" if score is None else f"{score:.3f}"
