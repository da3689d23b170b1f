"""2. Concurrency: many sessions playing episodes against one server process, through AgentEnv and bare.

Each session plays episodes back to back (reset, 8 tool calls, end_turn, get_reward: 10 messages) for
a fixed time, in eight rounds alternating with the baselines' against servers up at once, after one
untimed episode each round. Each round starts once both servers are quiet, so that the sessions the
last round closed are not torn down during the next. The bare baseline sends the same 10 messages
per episode with `GenericEnvClient`, every session on one event loop: the fastest OpenEnv's client
goes. A second bare figure calls it as AgentEnv is called, as TRL calls an environment: each
session's `.sync()` client on a thread of its own, blocking on each call (each such client runs a
loop thread of its own). Targets on this machine: 256 sessions with zero errors, at least 1,000 tool
calls/s through AgentEnv at 64 sessions, and there at least 0.8x the bare baseline's tool calls/s.
Then 64 sessions play against a server that records every trajectory (`--record`) and against the
same server without, in ten short alternating rounds: the recording one's tool calls/s within 5 % of
the other's.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Figure, Results, percentile, rollout, server, settle

CALLS_PER_EPISODE = 8
TARGET_CALLS_PER_S = 1000.0
TARGET_RATIO = 0.8
"""AgentEnv's tool calls/s at 64 sessions, as a share of bare OpenEnv's in the same run."""
TARGET_RECORDING_RATIO = 0.95
"""A recording server's tool calls/s at 64 sessions, as a share of the same server's without."""
RECORDING, NOT_RECORDING = "AgentEnv, recording", "AgentEnv, the same server not recording"


@dataclass
class Load:
    latencies: list[float] = field(default_factory=list)
    episodes: int = 0
    errors: int = 0
    seconds: float = 0.0

    @property
    def calls_per_s(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def add(self, other: Load) -> None:
        """Count another round's calls, episodes, errors and seconds with these."""
        self.latencies += other.latencies
        self.episodes += other.episodes
        self.errors += other.errors
        self.seconds += other.seconds


Episode = Callable[[], tuple[list[float], int]]
"""Plays one episode on one session; the timed calls' latencies, and how many answers were wrong."""


def threaded(duration_s: float, episodes: list[Episode]) -> Load:
    """Each session on a thread of its own, blocking on each call as TRL's rollouts do: one untimed
    episode each, then episodes back to back for `duration_s`, all sessions in the same window."""
    load = Load()
    lock = threading.Lock()
    window: dict[str, float] = {}

    def open_window() -> None:
        window["start"] = time.perf_counter()
        window["stop"] = window["start"] + duration_s

    ready = threading.Barrier(len(episodes) + 1, action=open_window)

    def worker(episode: Episode) -> None:
        episode()
        ready.wait()
        while time.perf_counter() < window["stop"]:
            try:
                latencies, errors = episode()
            except Exception:
                latencies, errors = [], 1
            with lock:
                load.latencies += latencies
                load.errors += errors
                load.episodes += 1

    with ThreadPoolExecutor(len(episodes)) as pool:
        futures = [pool.submit(worker, episode) for episode in episodes]
        ready.wait(timeout=300)
        for future in futures:
            future.result(timeout=duration_s + 300)
        load.seconds = time.perf_counter() - window["start"]
    return load


def ping_episode(environment: Any, row: dict[str, object]) -> tuple[list[float], int]:
    """One episode of the bench bundle's `ping` task through an `env.factory` instance."""
    latencies, errors = [], 0
    environment.reset(**row)
    for value in range(CALLS_PER_EPISODE):
        start = time.perf_counter()
        answer = environment.ping(value=value)
        latencies.append(time.perf_counter() - start)
        errors += answer != str(value)
    environment.end_turn(reply="done")
    errors += environment.get_reward() != 1.0
    return latencies, errors


def through_agentenv(
    url: str | list[str], sessions: int, duration_s: float, *, placed: Callable[[], None] | None = None
) -> Load:
    """`sessions` environments of `AgentEnv(url)` playing for `duration_s`; `placed`, if given, is
    called once every one has reset, before they play."""
    from agent_env.training.trl import AgentEnv

    with AgentEnv(url) as env:
        made = [rollout(env, 0) for _ in range(sessions)]
        if placed is not None:
            for environment, row in made:
                environment.reset(**row)
            placed()
        return threaded(
            duration_s, [functools.partial(ping_episode, environment, row) for environment, row in made]
        )


def bare_threads(url: str, sessions: int, duration_s: float) -> Load:
    """Bare OpenEnv called as a trainer calls an environment: `GenericEnvClient(...).sync()` per
    session, each on a thread of its own."""
    from openenv import GenericEnvClient

    def play(client: Any) -> tuple[list[float], int]:
        latencies, errors = [], 0
        client.reset()
        for value in range(CALLS_PER_EPISODE + 1):
            start = time.perf_counter()
            result = client.step({"value": value})
            if value < CALLS_PER_EPISODE:
                latencies.append(time.perf_counter() - start)
                errors += result.observation.get("value") != value
        return latencies, errors

    clients = [GenericEnvClient(base_url=url, message_timeout_s=120).sync() for _ in range(sessions)]
    try:
        return threaded(duration_s, [functools.partial(play, client) for client in clients])
    finally:
        for client in clients:
            client.close()


def bare_one_loop(url: str, sessions: int, duration_s: float) -> Load:
    """Bare OpenEnv at its fastest: every session's `GenericEnvClient` on one event loop, no threads."""
    from openenv import GenericEnvClient

    load = Load()

    async def episode(client: GenericEnvClient, timed: bool) -> None:
        try:
            await client.reset()
            for value in range(CALLS_PER_EPISODE + 1):
                start = time.perf_counter()
                result = await client.step({"value": value})
                if timed and value < CALLS_PER_EPISODE:
                    load.latencies.append(time.perf_counter() - start)
                    load.errors += result.observation.get("value") != value
        except Exception:
            load.errors += 1
        load.episodes += timed

    async def session(client: GenericEnvClient, ready: asyncio.Barrier, stop: list[float]) -> None:
        await episode(client, timed=False)
        await ready.wait()
        while time.perf_counter() < stop[0]:
            await episode(client, timed=True)

    async def main() -> None:
        clients = [GenericEnvClient(base_url=url, message_timeout_s=120) for _ in range(sessions)]
        ready, stop = asyncio.Barrier(sessions + 1), [float("inf")]
        tasks = [asyncio.create_task(session(client, ready, stop)) for client in clients]
        await asyncio.wait_for(ready.wait(), 300)
        start = time.perf_counter()  # one loop: no session runs before this line sets the stop
        stop[0] = start + duration_s
        await asyncio.wait_for(asyncio.gather(*tasks), duration_s + 300)
        load.seconds = time.perf_counter() - start
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)

    asyncio.run(main())
    return load


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    levels, duration_s, rounds = ([1, 8], 1.0, 2) if quick else ([1, 16, 64, 256], 8.0, 8)
    kinds = (
        ("AgentEnv", "bundle", through_agentenv),
        ("bare OpenEnv", "bare", bare_one_loop),
        ("bare OpenEnv, sync clients on threads", "bare", bare_threads),
    )
    loads: dict[tuple[str, int], Load] = {}
    for sessions in levels:
        # Both servers up at once, and the kinds in alternating rounds, so that drift in the
        # machine's load falls on all of them alike.
        with server("bundle", workdir=workdir) as served, server("bare", workdir=workdir) as baseline:
            urls = {"bundle": served.url, "bare": baseline.url}
            for _ in range(rounds):
                for name, kind, measure in kinds:
                    settle([served, baseline])
                    loads.setdefault((name, sessions), Load()).add(
                        measure(urls[kind], sessions, duration_s / rounds)
                    )
    _recording(results, workdir, quick=quick)
    for name, _, _ in kinds:
        series: dict[int, float] = {}
        for sessions in levels:
            load = loads[(name, sessions)]
            series[sessions] = load.calls_per_s
            target = TARGET_CALLS_PER_S if (name, sessions) == ("AgentEnv", 64) else None
            errors_target = 0.0 if (name, sessions) == ("AgentEnv", 256) else None
            results.add(
                Figure(
                    "load",
                    f"{name}, {sessions} sessions: tool calls/s",
                    load.calls_per_s,
                    "/s",
                    target,
                    lower=False,
                ),
                Figure(
                    "load", f"{name}, {sessions} sessions: episodes/s", load.episodes / load.seconds, "/s"
                ),
                Figure(
                    "load",
                    f"{name}, {sessions} sessions: call p50",
                    percentile(load.latencies, 50) * 1e3,
                    "ms",
                ),
                Figure(
                    "load",
                    f"{name}, {sessions} sessions: call p95",
                    percentile(load.latencies, 95) * 1e3,
                    "ms",
                ),
                Figure("load", f"{name}, {sessions} sessions: errors", float(load.errors), "", errors_target),
            )
        results.throughput[name] = series
    for sessions in levels:
        ours = results.throughput["AgentEnv"][sessions]
        target = TARGET_RATIO if sessions == 64 else None
        results.add(
            Figure(
                "load",
                f"AgentEnv / bare OpenEnv calls/s, {sessions} sessions",
                ours / results.throughput["bare OpenEnv"][sessions],
                "x",
                target,
                lower=False,
            ),
            Figure(
                "load",
                f"AgentEnv / bare OpenEnv's sync clients on threads, {sessions} sessions",
                ours / results.throughput["bare OpenEnv, sync clients on threads"][sessions],
                "x",
            ),
        )


def _recording(results: Results, workdir: Path, *, quick: bool) -> None:
    """A recording server against the same server without, at 64 sessions, in many short alternating
    rounds: the two differ by a few percent at most, less than the load's drift over a long round."""
    sessions, rounds, round_s = (8, 2, 0.5) if quick else (64, 10, 1.5)
    loads = {RECORDING: Load(), NOT_RECORDING: Load()}
    with (
        server("bundle", workdir=workdir) as plain,
        server("bundle", workdir=workdir, record=True) as recorder,
    ):
        for _ in range(rounds):
            for name, url in ((RECORDING, recorder.url), (NOT_RECORDING, plain.url)):
                settle([plain, recorder])
                loads[name].add(through_agentenv(url, sessions, round_s))
    recorded, not_recorded = loads[RECORDING], loads[NOT_RECORDING]
    results.add(
        Figure("load", f"{RECORDING}, {sessions} sessions: tool calls/s", recorded.calls_per_s, "/s"),
        Figure("load", f"{NOT_RECORDING}, {sessions} sessions: tool calls/s", not_recorded.calls_per_s, "/s"),
        Figure("load", f"{RECORDING}, {sessions} sessions: errors", float(recorded.errors), "", 0.0),
        Figure(
            "load",
            f"recording / not, AgentEnv calls/s, {sessions} sessions",
            recorded.calls_per_s / not_recorded.calls_per_s,
            "x",
            TARGET_RECORDING_RATIO,
            lower=False,
        ),
    )
