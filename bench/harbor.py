"""8. Harbor tasks: a reset from a warm pool of the task's own image, beside a container per reset.

Two Harbor tasks (bench/harbor_tasks), each built from its own Dockerfile (FROM the sandbox image),
served twice in alternating rounds: with a warm pool per image (`--warm`) and without (a container
started for each reset, from the task's image). Each reset is on a fresh session, the two tasks in
turn; before each, the pools are given the time to refill. Target: the pooled reset, p50 at most 50 ms.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from bench.common import Figure, Results, docker_engine, percentile, server
from bench.sandboxes import refilled

WARM = 2
RESET_TARGET_MS = 50.0
TASKS = (0, 1)


def fresh_reset(url: str, index: int) -> tuple[float, int]:
    """Seconds a reset of task `index` takes on a new session, and its errors (its test.sh then scores it)."""
    from openenv import GenericEnvClient

    client = GenericEnvClient(base_url=url, message_timeout_s=120).sync()
    try:
        client.connect()
        start = time.perf_counter()
        opened = client.reset(split="train", index=index, timeout_s=60)
        seconds = time.perf_counter() - start
        ended = client.step({"kind": "end_turn", "reply": "done"})
    finally:
        client.close()
    return seconds, int(opened.observation.get("error") is not None) + int(ended.reward != 1.0)


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    if not docker_engine():
        results.add(Figure("harbor", "Harbor tasks", float("nan"), "ms", note="no Docker engine"))
        return
    count, rounds = (2, 1) if quick else (10, 3)
    ways = {f"a warm pool of {WARM} per image": WARM, "a container per reset": None}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    errors = dict.fromkeys(ways, 0)
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(server("harbor", sandbox="docker", workdir=workdir, warm=warm))
            for name, warm in ways.items()
        }
        for _ in range(rounds):
            for name, served in servers.items():
                for n in range(count):
                    refilled(served)
                    took, failed = fresh_reset(served.url, TASKS[n % len(TASKS)])
                    seconds[name].append(took)
                    errors[name] += failed
    for name in ways:
        target = RESET_TARGET_MS if name.startswith("a warm pool") else None
        results.add(
            Figure("harbor", f"reset, {name}: p50", percentile(seconds[name], 50) * 1e3, "ms", target),
            Figure("harbor", f"reset, {name}: p95", percentile(seconds[name], 95) * 1e3, "ms"),
            Figure("harbor", f"resets, {name}: errors", float(errors[name]), "", 0.0),
        )
