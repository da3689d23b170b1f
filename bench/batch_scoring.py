"""11. A batch scored at once: GRPOTrainer's rollouts of a Harbor task whose test.sh takes 2 s.

GRPOTrainer asks each environment for its reward one rollout after another. B rollouts of the
`slow-tests` Harbor task (bench/slow_tests, Docker) are deployed and played (one `bash` call each,
which waits for the deploy), then scored three ways, side by side in alternating rounds, each on
fresh episodes: one rollout alone (one verification's time, the baseline); B rollouts one at a time,
as `get_reward` in turn scores them (the model ended in plain text); B rollouts with `score_batch`,
the reward function GRPOTrainer hands the batch's environments, then `get_reward` in turn; and B
rollouts that each end their last turn with `end_turn` (as TRL's loop calls it, one after another),
then `get_reward` in turn. Target: `score_batch`'s B rollouts in at most 1.5x one verification.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import Figure, Results, docker_engine, server

BATCH_TARGET = 1.5
"""B rollouts scored together, in units of one verification's time."""


def played(env: Any, count: int) -> list[Any]:
    """`count` environments, each reset on the slow task and deployed (a bash call waits for it)."""
    environments = []
    for _ in range(count):
        environment = env.factory()
        environment.reset(**env.dataset[0])
        environments.append(environment)
    for environment in environments:
        environment.bash(command="true")
    return environments


def scored(environments: Sequence[Any], score: Callable[[Sequence[Any]], None]) -> tuple[float, int]:
    """Seconds to score the environments as `score` does, and how many did not score 1."""
    started = time.perf_counter()
    score(environments)
    rewards = [environment.get_reward() for environment in environments]
    return time.perf_counter() - started, sum(reward != 1.0 for reward in rewards)


def one_at_a_time(environments: Sequence[Any]) -> None:
    """GRPOTrainer without score_batch: each get_reward in turn ends its open turn and waits."""


def with_score_batch(environments: Sequence[Any]) -> None:
    from agent_env.training.trl import score_batch

    score_batch(completions=[[]] * len(environments), environments=environments)


def ended_by_the_model(environments: Sequence[Any]) -> None:
    """Each rollout's model ended its last turn itself, in TRL's loop, one after another."""
    for environment in environments:
        environment.end_turn(reply="done")


WAYS: dict[str, Callable[[Sequence[Any]], None]] = {
    "one at a time (get_reward in turn)": one_at_a_time,
    "score_batch": with_score_batch,
    "each ended by end_turn in TRL's loop": ended_by_the_model,
}


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    if not docker_engine():
        results.add(Figure("batch", "a batch scored at once", float("nan"), "x", note="no Docker engine"))
        return
    from agent_env.training.trl import AgentEnv

    batch, rounds = (2, 1) if quick else (8, 3)
    alone: list[float] = []
    seconds: dict[str, list[float]] = {name: [] for name in WAYS}
    errors = dict.fromkeys(["alone", *WAYS], 0)
    with server("slow-tests", sandbox="docker", workdir=workdir) as served, AgentEnv(served.url) as env:
        for _ in range(rounds):
            took, failed = scored(played(env, 1), one_at_a_time)
            alone.append(took)
            errors["alone"] += failed
            for name, way in WAYS.items():
                took, failed = scored(played(env, batch), way)
                seconds[name].append(took)
                errors[name] += failed
    one = statistics.median(alone)
    results.add(Figure("batch", "one verification (test.sh: 2 s)", one, "s"))
    for name in WAYS:
        ratio = statistics.median(seconds[name]) / one
        target = BATCH_TARGET if name == "score_batch" else None
        results.add(Figure("batch", f"{batch} rollouts, {name}: x one verification", ratio, "x", target))
    results.add(Figure("batch", "rollouts not scored 1", float(sum(errors.values())), "", 0.0))
