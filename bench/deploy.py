"""3. Deploy: how long a reset takes, with the local and the Docker sandbox, and what a live episode costs.

Each reset is timed as a trainer sees it: the previous episode has just scored, so the reset also waits
for its teardown. Targets: p50 under 20 ms with the local sandbox, under 1 s with Docker; the server's
memory per live episode at 256 episodes under 2 MiB over the idle server.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bench.common import Figure, Results, Server, docker_engine, percentile, server

SANDBOX_TASK = 1  # ping-shell: the counter env and a sandbox with one file
LOCAL_TARGET_MS, DOCKER_TARGET_MS, MEMORY_TARGET_MIB = 20.0, 1000.0, 2.0


def reset_latencies(url: str, count: int) -> tuple[list[float], int]:
    """Seconds per reset of the sandbox task, each after the previous episode scored; and the errors."""
    from openenv import GenericEnvClient

    client = GenericEnvClient(base_url=url, message_timeout_s=120).sync()
    samples, errors = [], 0
    try:
        for _ in range(count + 1):
            start = time.perf_counter()
            opened = client.reset(split="train", index=SANDBOX_TASK, timeout_s=60)
            samples.append(time.perf_counter() - start)
            errors += opened.observation.get("error") is not None
            ended = client.step({"kind": "end_turn", "reply": "done"})
            errors += ended.reward != 1.0
    finally:
        client.close()
    return samples[1:], errors  # the first reset also opened the session


def memory_per_episode(served: Server, episodes: int) -> float:
    """MiB of server memory each of `episodes` live episodes adds over the idle server."""
    from openenv import GenericEnvClient

    reset_latencies(served.url, 3)
    idle = served.rss_mib()

    async def hold() -> float:
        clients = [GenericEnvClient(base_url=served.url, message_timeout_s=120) for _ in range(episodes)]
        try:
            opened = await asyncio.gather(
                *(c.reset(split="train", index=SANDBOX_TASK, timeout_s=60) for c in clients)
            )
            assert all(o.observation.get("error") is None for o in opened), "a reset failed"
            assert served.status()["live_episodes"] == episodes
            return served.rss_mib()
        finally:
            await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)

    live = asyncio.run(hold())
    return (live - idle) / episodes


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    count, held = (20, 32) if quick else (200, 256)
    with server("bundle", workdir=workdir) as served:
        local, errors = reset_latencies(served.url, count)
        per_episode = memory_per_episode(served, held)
    results.add(
        Figure("deploy", "reset, local sandbox: p50", percentile(local, 50) * 1e3, "ms", LOCAL_TARGET_MS),
        Figure("deploy", "reset, local sandbox: p95", percentile(local, 95) * 1e3, "ms"),
        Figure("deploy", "reset, local sandbox: errors", float(errors), "", 0.0),
        Figure("deploy", f"memory per live episode ({held} live)", per_episode, "MiB", MEMORY_TARGET_MIB),
    )
    if not docker_engine():
        results.add(Figure("deploy", "reset, Docker sandbox", float("nan"), "ms", note="no Docker engine"))
        return
    with server("bundle", sandbox="docker", workdir=workdir) as served:
        docker, errors = reset_latencies(served.url, 3 if quick else 30)
    results.add(
        Figure("deploy", "reset, Docker sandbox: p50", percentile(docker, 50) * 1e3, "ms", DOCKER_TARGET_MS),
        Figure("deploy", "reset, Docker sandbox: p95", percentile(docker, 95) * 1e3, "ms"),
        Figure("deploy", "reset, Docker sandbox: errors", float(errors), "", 0.0),
    )
