"""1. Tool-call overhead: one trivial tool called in process, as a bare OpenEnv step, and through AgentEnv.

(a) is the floor; (b) is OpenEnv alone, `GenericEnvClient` against the smallest environment served the
same way; (c) is a trainer's call: an `env.factory` instance against `build_app`. Target: (c)/(b) <= 1.15
at the median.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.common import Figure, Results, percentile, rollout, server
from bench.serve import BUNDLE

TARGET_RATIO = 1.15


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
    from agent_env.bundle import load_bundle

    counter: Any = load_bundle(BUNDLE).envs["counter"].cls()
    counter.setup({})
    return timed(lambda: counter.ping(value=1), count, warmup)


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    """(b) and (c) run in alternating rounds against two servers up at once, so drift in the machine's
    load falls on both alike; the server's CPU time per call is read from /proc around each round."""
    from openenv import GenericEnvClient

    from agent_env.training.trl import AgentEnv

    rounds, per_round, warmup = (3, 100, 30) if quick else (10, 400, 200)
    results.latencies["(a) in process"] = in_process(rounds * per_round, warmup)
    bare_name, ours_name = "(b) bare OpenEnv step", "(c) AgentEnv tool call"
    cpu: dict[str, float] = {bare_name: 0.0, ours_name: 0.0}
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
            for name, (_, call) in calls.items():
                timed(call, warmup, 0)
                results.latencies[name] = []
            for _ in range(rounds):
                for name, (process, call) in calls.items():
                    before = process.cpu_s()
                    results.latencies[name] += timed(call, per_round, 0)
                    cpu[name] += process.cpu_s() - before
        client.close()
    medians = {name: percentile(samples, 50) for name, samples in results.latencies.items()}
    for name, samples in results.latencies.items():
        results.add(
            Figure("overhead", f"{name}: p50", medians[name] * 1e3, "ms"),
            Figure("overhead", f"{name}: p95", percentile(samples, 95) * 1e3, "ms"),
        )
    for name, seconds in cpu.items():
        results.add(
            Figure("overhead", f"{name}: server CPU per call", seconds / (rounds * per_round) * 1e3, "ms")
        )
    ratio = medians[ours_name] / medians[bare_name]
    results.add(Figure("overhead", "(c)/(b) at p50", ratio, "x", TARGET_RATIO))
