"""14. Hand-offs between threads: the framework's own two against the standard library's, side by side.

Sync calls off the loop (the server's sync tools): `Workers` (`agent_env._threads.run_sync`) against
a `ThreadPoolExecutor` through `loop.run_in_executor`. Both run a call that does nothing, in a copy
of the caller's context, on a pool of the same size, on one event loop: one call at a time (its
round trip) and `CONCURRENT` calls at once (what a server of many sessions asks; the process's CPU
per call is the cost on the loop and the workers together).

The client's messages onto its loop (every message of a trainer's session): `ClientLoop.submit` and
its `Answer` (`agent_env.client._loop`) against `asyncio.run_coroutine_threadsafe` and its
`concurrent.futures.Future`, a coroutine that does nothing handed from the caller's thread to the
same loop thread and waited for.

Each pair runs in alternating rounds, so drift in the machine's load falls on both alike. The ratios
are the standard library's over the framework's: above 1, the framework's own is the cheaper.
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
from typing import Protocol

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


class _Waited(Protocol):
    def result(self, timeout: float | None = None) -> None: ...


async def _nothing_async() -> None:
    return None


def _handed(submit: Callable[[], _Waited], count: int) -> list[float]:
    """Seconds per round trip of `count` coroutines handed to the loop and waited for, one at a time."""
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        submit().result()
        samples.append(time.perf_counter() - start)
    return samples


def _client_loop(rounds: int, per_round: int) -> dict[str, list[float]]:
    from agent_env.client._loop import ClientLoop

    client = ClientLoop("bench-client-loop")
    loop = client._loop_running()
    ways: dict[str, Callable[[], _Waited]] = {
        "ClientLoop": lambda: client.submit(_nothing_async()),
        "run_coroutine_threadsafe": lambda: asyncio.run_coroutine_threadsafe(_nothing_async(), loop),
    }
    seen: dict[str, list[float]] = {name: [] for name in ways}
    for submit in ways.values():
        _handed(submit, per_round // 4)
    for index in range(rounds):
        for name in list(ways) if index % 2 == 0 else list(ways)[::-1]:
            seen[name] += _handed(ways[name], per_round)
    loop.call_soon_threadsafe(loop.stop)
    return seen


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    rounds, per_round, each = (2, 200, 10) if quick else (20, 2000, 100)
    handed = _client_loop(rounds, per_round)
    for name, samples in handed.items():
        results.add(
            Figure("threads", f"{name}: a message's hand-off, p50", percentile(samples, 50) * 1e6, "µs")
        )
    results.add(
        Figure(
            "threads",
            "run_coroutine_threadsafe/ClientLoop: a message's hand-off, p50",
            percentile(handed["run_coroutine_threadsafe"], 50) / percentile(handed["ClientLoop"], 50),
            "x",
        )
    )
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
