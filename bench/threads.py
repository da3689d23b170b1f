"""14. Sync calls off the loop: the framework's `Workers` (`agent_env._threads.run_sync`) against the
standard library's `ThreadPoolExecutor` through `loop.run_in_executor`, side by side.

Both run a call that does nothing, in a copy of the caller's context, on a pool of the same size, on
one event loop, in alternating rounds (so drift in the machine's load falls on both alike): one call
at a time (its round trip) and `CONCURRENT` calls at once (what a server of many sessions asks; the
process's CPU per call is the cost on the loop and the workers together). The figures are the
executor's over the workers': above 1, the workers are the cheaper.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import statistics
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import Figure, Results, percentile

CONCURRENT = 64
POOL = 64


def _nothing() -> None:
    return None


async def _one_at_a_time(call: Callable[[], Awaitable[None]], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return samples


async def _at_once(call: Callable[[], Awaitable[None]], each: int) -> tuple[float, float]:
    """Wall and CPU seconds per call, `CONCURRENT` callers making `each` calls apiece."""

    async def caller() -> None:
        for _ in range(each):
            await call()

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(caller() for _ in range(CONCURRENT)))
    calls = CONCURRENT * each
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


async def _compare(rounds: int, per_round: int, each: int) -> dict[str, dict[str, list[float]]]:
    from agent_env import _threads

    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(POOL, thread_name_prefix="bench-executor")
    _threads._pool = _threads.Workers(POOL, name="bench-workers")

    async def workers() -> None:
        await _threads.run_sync(_nothing)

    async def executor_call() -> None:
        await loop.run_in_executor(executor, functools.partial(contextvars.copy_context().run, _nothing))

    calls = {"workers": workers, "executor": executor_call}
    seen: dict[str, dict[str, list[float]]] = {name: {"latency": [], "wall": [], "cpu": []} for name in calls}
    for call in calls.values():  # warm up: every thread of both pools started
        await _at_once(call, 5)
    for index in range(rounds):
        order = list(calls) if index % 2 == 0 else list(calls)[::-1]
        for name in order:
            seen[name]["latency"] += await _one_at_a_time(calls[name], per_round)
            wall, cpu = await _at_once(calls[name], each)
            seen[name]["wall"].append(wall)
            seen[name]["cpu"].append(cpu)
    executor.shutdown()
    return seen


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    rounds, per_round, each = (2, 200, 10) if quick else (20, 2000, 100)
    seen = asyncio.run(_compare(rounds, per_round, each))
    for name in seen:
        latency, wall, cpu = seen[name]["latency"], seen[name]["wall"], seen[name]["cpu"]
        results.add(
            Figure("threads", f"{name}: one call's round trip, p50", percentile(latency, 50) * 1e6, "µs"),
            Figure(
                "threads", f"{name}: {CONCURRENT} at once, wall per call", statistics.median(wall) * 1e6, "µs"
            ),
            Figure(
                "threads", f"{name}: {CONCURRENT} at once, CPU per call", statistics.median(cpu) * 1e6, "µs"
            ),
        )
    ratios = {
        "one call's round trip, p50": percentile(seen["executor"]["latency"], 50)
        / percentile(seen["workers"]["latency"], 50),
        f"{CONCURRENT} at once, wall per call": _paired(seen, "wall"),
        f"{CONCURRENT} at once, CPU per call": _paired(seen, "cpu"),
    }
    for name, ratio in ratios.items():
        results.add(Figure("threads", f"executor/workers: {name}", ratio, "x"))


def _paired(seen: dict[str, dict[str, list[float]]], figure: str) -> float:
    """The median over rounds of the executor's figure over the workers' in the same round."""
    pairs = zip(seen["executor"][figure], seen["workers"][figure], strict=True)
    return statistics.median(executor / workers for executor, workers in pairs)
