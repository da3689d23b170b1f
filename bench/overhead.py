"""1. Tool-call overhead: one trivial tool called in process, as a bare OpenEnv step, and through AgentEnv.

(a) is the floor; (b) is OpenEnv alone, `GenericEnvClient` against the smallest environment served the
same way; (c) is a trainer's call: an `env.factory` instance against `build_app`. Target: (c)/(b) <= 1.15
at the median, the median of `PAIRS` fresh pairs of servers.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from bench.common import Figure, Results, percentile, rollout, server
from bench.serve import BUNDLE

TARGET_RATIO = 1.15
PAIRS = 3


def timed(call: object, count: int, warmup: int) -> list[float]:
    """Seconds per call of `call()`, after `warmup` calls not counted."""
    assert callable(call)
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def in_process(count: int, warmup: int) -> list[float]:
    from agent_env import EnvDefinition, load_bundle

    env = load_bundle(BUNDLE).envs["counter"]
    assert isinstance(env, EnvDefinition), "the bench's bundle has one Python env"
    counter: Any = env.cls()
    counter.setup({})
    return timed(lambda: counter.ping(value=1), count, warmup)


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    """(b) and (c) run in alternating rounds against two servers up at once, so drift in the machine's
    load falls on both alike; the server's CPU time per call is read from /proc around each round.

    The two servers are started `PAIRS` times afresh and the ratio is the median of the pairs': a
    ratio moves by a few hundredths from one pair of processes to the next (where the scheduler puts
    their threads, on two cores), far more than within one pair's rounds.
    """
    rounds, per_round, warmup, pairs = (3, 100, 30, 1) if quick else (10, 400, 200, PAIRS)
    results.latencies["(a) in process"] = in_process(rounds * per_round, warmup)
    bare_name, ours_name = "(b) bare OpenEnv step", "(c) AgentEnv tool call"
    cpu: dict[str, float] = {bare_name: 0.0, ours_name: 0.0}
    results.latencies[bare_name], results.latencies[ours_name] = [], []
    ratios = []
    for _ in range(pairs):
        latencies = _one_pair(workdir, bare_name, ours_name, rounds, per_round, warmup, cpu)
        for name, samples in latencies.items():
            results.latencies[name] += samples
        ratios.append(percentile(latencies[ours_name], 50) / percentile(latencies[bare_name], 50))
    calls = pairs * rounds * per_round
    for name, samples in results.latencies.items():
        results.add(
            Figure("overhead", f"{name}: p50", percentile(samples, 50) * 1e3, "ms"),
            Figure("overhead", f"{name}: p95", percentile(samples, 95) * 1e3, "ms"),
        )
    for name, seconds in cpu.items():
        results.add(Figure("overhead", f"{name}: server CPU per call", seconds / calls * 1e3, "ms"))
    each = ", ".join(f"{ratio:.3f}" for ratio in ratios)
    results.add(
        Figure(
            "overhead", "(c)/(b) at p50", statistics.median(ratios), "x", TARGET_RATIO, note=f"pairs: {each}"
        )
    )


def _one_pair(
    workdir: Path,
    bare_name: str,
    ours_name: str,
    rounds: int,
    per_round: int,
    warmup: int,
    cpu: dict[str, float],
) -> dict[str, list[float]]:
    """Each call's seconds through one fresh pair of servers; their CPU time is added to `cpu`."""
    from openenv import GenericEnvClient

    from agent_env.training.trl import AgentEnv

    latencies: dict[str, list[float]] = {bare_name: [], ours_name: []}
    with server("bare", workdir=workdir) as bare, server("bundle", workdir=workdir) as served:
        client = GenericEnvClient(base_url=bare.url).sync()
        with AgentEnv(served.url) as env:
            environment, row = rollout(env, 0)
            environment.reset(**row)
            client.reset()
            calls = {
                bare_name: (bare, lambda: client.step({"value": 1})),
                ours_name: (served, lambda: environment.ping(value=1)),
            }
            for _, call in calls.values():
                timed(call, warmup, 0)
            for _ in range(rounds):
                for name, (process, call) in calls.items():
                    before = process.cpu_s()
                    latencies[name] += timed(call, per_round, 0)
                    cpu[name] += process.cpu_s() - before
        client.close()
    return latencies
