"""6. Commands: a bash `true` through the Episode API, in one episode, with each local sandbox.

The local sandbox's shell lives for the episode and forks each command (`agent_env.sandbox.shell`):
measured unconfined and, where it runs, under bubblewrap, against the way before it, side by side in
the same run: a bash process spawned for each command, whose exit was polled every 10 ms (unconfined,
and under bubblewrap). Target: p50 at most 2 ms, with and without bubblewrap.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from bench.common import Figure, Results, percentile
from bench.serve import BUNDLE

SHELL_TASK = 1  # ping-shell: the counter env and a sandbox
TARGET_MS = 2.0
_OLD_POLL_S = 0.01


async def through_episode(workdir: Path, isolation: str, count: int) -> list[float]:
    """Seconds per `bash true` of one episode's `count` commands, through `Episode.call_tool`."""
    from agent_env import Episode
    from agent_env.bundle import load_bundle
    from agent_env.sandbox import LocalSandboxProvider

    task = load_bundle(BUNDLE).splits["train"][SHELL_TASK]
    episode = Episode(task, provider=LocalSandboxProvider(workdir, isolation=isolation))
    await episode.deploy()
    try:
        return await _timed(lambda: episode.call_tool("bash", {"command": "true"}), count)
    finally:
        await episode.teardown()


async def a_process_per_command(workdir: Path, bwrap: str | None, count: int) -> list[float]:
    """The way before: a bash started for each command, its exit polled every 10 ms."""
    from agent_env.sandbox.bubblewrap import confined

    argv = ["bash", "-c", "true"]
    command = confined(bwrap, workdir, argv) if bwrap else argv

    async def once() -> None:
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        waiting = asyncio.ensure_future(process.wait())
        while process.returncode is None and not waiting.done():
            await asyncio.wait({waiting}, timeout=_OLD_POLL_S)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await waiting

    return await _timed(once, count)


async def _timed(call: Callable[[], Awaitable[object]], count: int) -> list[float]:
    await call()  # the first command also starts the shell: a reset's work, not a command's
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return samples


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    from agent_env.sandbox.bubblewrap import bubblewrap_for

    count, rounds = (10, 1) if quick else (40, 5)
    bwrap = bubblewrap_for("auto")
    ways: dict[str, Callable[[], Coroutine[Any, Any, list[float]]]] = {
        "local sandbox, unconfined": lambda: through_episode(workdir, "none", count),
        "the way before, unconfined: a bash per command, exit polled": lambda: a_process_per_command(
            workdir, None, count
        ),
    }
    if bwrap is not None:
        ways["local sandbox, bubblewrap"] = lambda: through_episode(workdir, "bubblewrap", count)
        ways["the way before, bubblewrap: a bwrap and a bash per command, exit polled"] = lambda: (
            a_process_per_command(workdir, bwrap, count)
        )
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):  # alternating, so that drift in the machine's load falls on all alike
        for name, way in ways.items():
            samples[name] += asyncio.run(way())
    for name, seconds in samples.items():
        target = TARGET_MS if name.startswith("local sandbox") else None
        results.add(
            Figure("commands", f"bash true, {name}: p50", percentile(seconds, 50) * 1e3, "ms", target),
            Figure("commands", f"bash true, {name}: p95", percentile(seconds, 95) * 1e3, "ms"),
        )
    if bwrap is None:
        results.add(
            Figure("commands", "bash true, local sandbox, bubblewrap", float("nan"), "ms", note="no bwrap")
        )
