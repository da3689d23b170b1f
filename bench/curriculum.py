"""13. The online curriculum's cost to a trainer: a GRPO batch's calls on its rows, beside the split's.

A GRPOTrainer batch of 32 rollouts (4 groups of 8) on the depot (`examples/depot`, served in process
by `AgentEnv.local`, as `make demo` serves it) is played as TRL plays it: each environment reset with
its row, its turn ended, then every reward taken in turn. The same batch on the split's own rows (the
baseline) and on `env.curriculum`'s rows (each group's first reset asks the server for its task; each
reward tells the server its score) alternate, round after round, on one server. The figure is the
curriculum's extra time per rollout, and, beside it, one Task API request on a kept-alive
connection (`GET /health`), which the curriculum's calls are: each was about 44 ms before the
server's connections sent without Nagle's delay.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.common import ROOT, Figure, Results, percentile

DEPOT = ROOT / "examples" / "depot"
GROUPS, GENERATIONS = 4, 8
EXTRA_TARGET_MS = 5.0
"""The curriculum's time per rollout beyond the split's rows' (the draw, shared by a group, and the
score), at most."""
REQUEST_TARGET_MS = 5.0


def batch(environments: Sequence[Any], rows: Sequence[dict[str, Any]]) -> tuple[float, int]:
    """Seconds to play a batch as GRPOTrainer does (resets, an end each, rewards in turn), and how
    many rollouts were not scored."""
    started = time.perf_counter()
    for environment, row in zip(environments, rows, strict=True):
        environment.reset(**row)
    for environment in environments:
        environment.end_turn(reply="done")
    rewards = [environment.get_reward() for environment in environments]
    return time.perf_counter() - started, sum(reward is None for reward in rewards)


def grouped(dataset: Any, first: int) -> list[dict[str, Any]]:
    """GROUPS rows from `first` on, each repeated GENERATIONS times in a row, as GRPO's sampler does."""
    rows = [dict(dataset[first + group]) for group in range(GROUPS)]
    return [row for row in rows for _ in range(GENERATIONS)]


def kept_alive_ms(url: str, requests: int) -> list[float]:
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        client.get("/health")
        took = []
        for _ in range(requests):
            started = time.perf_counter()
            client.get("/health").raise_for_status()
            took.append((time.perf_counter() - started) * 1000)
    return took


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    from agent_env.training.trl import AgentEnv

    rounds = 2 if quick else 12
    size = GROUPS * GENERATIONS
    seconds: dict[str, list[float]] = {"split": [], "curriculum": []}
    unscored = 0
    with AgentEnv.local(DEPOT, max_concurrent_envs=2 * size) as env:
        curriculum = env.curriculum("train", seed=0, rows=GROUPS * (rounds + 1))
        made = env.factory
        assert isinstance(made, type), "the depot's train tasks share one toolset"
        environments = [made() for _ in range(size)]
        batch(environments, grouped(env.dataset, 0))  # warm: sessions opened, code loaded
        for n in range(rounds):
            for name, dataset in (("split", env.dataset), ("curriculum", curriculum.dataset)):
                took, failed = batch(environments, grouped(dataset, GROUPS * n))
                seconds[name].append(took)
                unscored += failed
        requests = kept_alive_ms(env.url, 20 if quick else 200)
    split, drawn = statistics.median(seconds["split"]), statistics.median(seconds["curriculum"])
    results.add(
        Figure("curriculum", f"a batch of {size} rollouts on the split's rows", split, "s"),
        Figure("curriculum", "the same on the curriculum's rows", drawn, "s"),
        Figure(
            "curriculum",
            "the curriculum's extra time a rollout",
            (drawn - split) / size * 1000,
            "ms",
            EXTRA_TARGET_MS,
        ),
        Figure(
            "curriculum",
            "a Task API request on a kept connection, p50",
            percentile(requests, 50),
            "ms",
            REQUEST_TARGET_MS,
        ),
        Figure("curriculum", "rollouts not scored", float(unscored), "", 0.0),
    )
