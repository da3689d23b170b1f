"""7. Docker sandboxes: resets with a warm pool, and how many sandboxes live at once.

Three servers of the bench bundle, each with Docker sandboxes, measured in alternating rounds: one
with a warm pool (`--warm`), one without, and the way before (`ContainerPerReset`: a container
started per reset, the task's files put in by an exec of their own, and its removal waited for at
teardown). Each reset is timed twice: on a fresh session (the deploy alone), and after an episode
on the same session (it also waits for that episode's teardown). Before each, the server is given
the time to refill its pool. Then 256 sessions each hold a sandbox at once, every one running a
command, and the machine's memory they take is shared out among them. Targets: a reset on a fresh
session with the pool, p50 at most 50 ms; 256 sandboxes live with no error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.common import Figure, Results, Server, docker_engine, percentile, server

SANDBOX_TASK = 1  # ping-shell: the counter env and a sandbox with one file
WARM = 8
RESET_TARGET_MS, DENSITY_TARGET = 50.0, 256
_REFILL_WAIT_S, _PAUSE_S = 60.0, 0.3
_DENSITY_AT_ONCE = 8
"""Resets in flight at once while the 256 sandboxes are made: more only queue in the engine."""


class ContainerPerReset:
    """The way before, as a provider: a container started for each reset with no shell yet, the task's
    files put in by an exec of their own, and the container's removal waited for at teardown."""

    name = "docker-before"

    def __init__(self) -> None:
        from agent_env.sandbox import DockerSandboxProvider, SandboxConfig

        self.provider = DockerSandboxProvider(SandboxConfig(provider="docker"))

    async def create(self, files: Mapping[str, bytes]) -> Any:
        from agent_env._threads import run_sync
        from agent_env.sandbox._docker import DockerSandbox, _archive, _unpack_by_exec

        class RemovedAtTeardown(DockerSandbox):
            async def teardown(self) -> None:
                import docker.errors

                with contextlib.suppress(docker.errors.NotFound):
                    await run_sync(self.container.remove, force=True, v=True)
                await super().teardown()

        self.provider.check_room(files)
        sandbox = RemovedAtTeardown(await run_sync(self.provider._start), self.provider.removals)
        if files:
            await run_sync(_unpack_by_exec, sandbox.container, _archive(files), sandbox.folder)
        return sandbox


def fresh_session_reset(url: str) -> tuple[float, int]:
    """Seconds a reset takes on a session that just opened, and its errors (the episode then scores)."""
    from openenv import GenericEnvClient

    client = GenericEnvClient(base_url=url, message_timeout_s=120).sync()
    try:
        client.connect()
        start = time.perf_counter()
        opened = client.reset(split="train", index=SANDBOX_TASK, timeout_s=60)
        seconds = time.perf_counter() - start
        ended = client.step({"kind": "end_turn", "reply": "done"})
    finally:
        client.close()
    return seconds, int(opened.observation.get("error") is not None) + int(ended.reward != 1.0)


def reset_after_episode(url: str, settle: Callable[[], None]) -> tuple[float, int]:
    """Seconds a reset takes right after the session's episode scored, and the errors."""
    from openenv import GenericEnvClient

    client = GenericEnvClient(base_url=url, message_timeout_s=120).sync()
    try:
        bash = {"kind": "call_tool", "tool": "bash", "arguments": {"command": "true"}}
        opened = client.reset(split="train", index=SANDBOX_TASK, timeout_s=60)
        errors = int(opened.observation.get("error") is not None)
        errors += client.step(bash).observation.get("error") is not None
        settle()
        errors += client.step({"kind": "end_turn", "reply": "done"}).reward != 1.0
        start = time.perf_counter()
        opened = client.reset(split="train", index=SANDBOX_TASK, timeout_s=60)
        seconds = time.perf_counter() - start
        errors += opened.observation.get("error") is not None
        errors += client.step({"kind": "end_turn", "reply": "done"}).reward != 1.0
    finally:
        client.close()
    return seconds, errors


def refilled(served: Server) -> None:
    """Once the server's pool, if it has one, is full again (and its last removal had a moment)."""
    time.sleep(_PAUSE_S)
    deadline = time.monotonic() + _REFILL_WAIT_S
    while (pool := served.status().get("warm_pool")) and pool["ready"] < pool["size"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the warm pool did not refill within {_REFILL_WAIT_S:g} s: {pool}")
        time.sleep(0.05)


def density(served: Server, count: int) -> tuple[int, float, float]:
    """Errors, MiB of the machine's memory per sandbox, and seconds, with `count` sandboxes live at once."""
    from openenv import GenericEnvClient

    idle = _available_mib()

    async def hold() -> tuple[int, float, float]:
        clients = [GenericEnvClient(base_url=served.url, message_timeout_s=300) for _ in range(count)]
        gate = asyncio.Semaphore(_DENSITY_AT_ONCE)

        async def open_one(client: Any) -> bool:
            async with gate:
                opened = await client.reset(split="train", index=SANDBOX_TASK, timeout_s=240)
                ran = await client.step(
                    {"kind": "call_tool", "tool": "bash", "arguments": {"command": "true"}}
                )
                return opened.observation.get("error") is None and ran.observation.get("error") is None

        try:
            started = time.perf_counter()
            answers = await asyncio.gather(*(open_one(c) for c in clients), return_exceptions=True)
            seconds = time.perf_counter() - started
            errors = sum(a is not True for a in answers)
            live = served.status()["live_episodes"]
            errors += abs(count - live)
            return errors, seconds, idle - _available_mib()
        finally:
            await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)

    errors, seconds, used = asyncio.run(hold())
    return errors, used / count, seconds


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    if not docker_engine():
        results.add(Figure("sandboxes", "Docker sandboxes", float("nan"), "ms", note="no Docker engine"))
        return
    count, rounds, live = (3, 1, 16) if quick else (10, 3, DENSITY_TARGET)
    ways: dict[str, dict[str, Any]] = {
        f"a warm pool of {WARM}": {"sandbox": "docker", "warm": WARM},
        "no pool": {"sandbox": "docker"},
        "the way before": {"sandbox": "docker-before"},
    }
    fresh: dict[str, list[float]] = {name: [] for name in ways}
    after: dict[str, list[float]] = {name: [] for name in ways}
    errors = dict.fromkeys(ways, 0)
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(server("bundle", workdir=workdir, **way)) for name, way in ways.items()
        }
        for _ in range(rounds):
            for name, served in servers.items():
                for _ in range(count):
                    refilled(served)
                    seconds, failed = fresh_session_reset(served.url)
                    fresh[name].append(seconds)
                    refilled(served)
                    again, failed_again = reset_after_episode(served.url, functools.partial(refilled, served))
                    after[name].append(again)
                    errors[name] += failed + failed_again
    for name in ways:
        target = RESET_TARGET_MS if name.startswith("a warm pool") else None
        results.add(
            Figure(
                "sandboxes",
                f"reset on a fresh session, {name}: p50",
                percentile(fresh[name], 50) * 1e3,
                "ms",
                target,
            ),
            Figure(
                "sandboxes", f"reset on a fresh session, {name}: p95", percentile(fresh[name], 95) * 1e3, "ms"
            ),
            Figure(
                "sandboxes", f"reset after an episode, {name}: p50", percentile(after[name], 50) * 1e3, "ms"
            ),
            Figure(
                "sandboxes", f"reset after an episode, {name}: p95", percentile(after[name], 95) * 1e3, "ms"
            ),
            Figure("sandboxes", f"resets, {name}: errors", float(errors[name]), "", 0.0),
        )
    with server("bundle", sandbox="docker", workdir=workdir, capacity=live + 8) as served:
        failed, per_sandbox, seconds = density(served, live)
    results.add(
        Figure("sandboxes", f"{live} Docker sandboxes live at once: errors", float(failed), "", 0.0),
        Figure(
            "sandboxes",
            f"{live} Docker sandboxes live at once: memory per sandbox",
            per_sandbox,
            "MiB",
            note=f"the machine's available memory, shared out; made in {seconds:.0f} s",
        ),
    )


def _available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")
