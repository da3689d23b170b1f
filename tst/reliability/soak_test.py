"""A soak run: 256 sessions play episodes against `agent-env serve` for minutes while clients drop.

The server is the command a user runs, a process of its own on loopback, serving the benchmarks'
bundle (a trivial `ping` tool; half the episodes with a bash sandbox, which runs a command each).
Every session plays episodes back to back through OpenEnv's own client; at random one in
`DROP_EVERY` episodes its client is dropped mid-episode (its socket closed) and a new one takes its
place. What must hold: no error but the injected drops, every episode of a dropped client torn down,
nothing left at the end (no episode, connection, sandbox folder or process), the server's memory
flat after warm-up (under 10 % growth), and, as it records (`--record`), every scored episode
recorded exactly once, each line whole. `AGENT_ENV_SOAK_S` sets the measured minutes' length.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_env import Trajectory, read_trajectories
from agent_env.openenv import AgentEnvAction
from tst.support.cli_server import agent_env_serve
from tst.support.waiting import child_processes, until

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 256
SOAK_S = float(os.environ.get("AGENT_ENV_SOAK_S", "150"))
WARM_UP_S = 30.0
DROP_EVERY = 20
PINGS = 4
MESSAGE_S = 120.0
MAX_GROWTH = 0.10


@dataclass
class Tally:
    episodes: int = 0
    drops: int = 0
    errors: list[str] = field(default_factory=list)
    rss_mib: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    sandboxes: Path
    record: Path

    def recorded(self) -> tuple[int, list[Trajectory]]:
        """Every line written so far, and the trajectories among them."""
        files = sorted(self.record.glob("*.jsonl"))
        lines = [line for path in files for line in path.read_text().splitlines()]
        return len(lines), list(read_trajectories(self.record))

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("the server has no VmRSS")

    def status(self) -> dict[str, Any]:
        answer: dict[str, Any] = httpx.get(f"{self.url}/yard/status", timeout=30).json()
        return answer


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    sandboxes, record = tmp_path / "sandboxes", tmp_path / "trajectories"
    sandboxes.mkdir()
    bundle, log = ROOT / "bench" / "bundle", tmp_path / "serve.log"
    options = ("--max-concurrent-envs", "512", "--record", str(record))
    with agent_env_serve(bundle, *options, log=log, tmpdir=sandboxes) as (process, url):
        yield Served(process, url, sandboxes, record)


async def session(url: str, index: int, stop_at: float, tally: Tally, chance: random.Random) -> None:
    from openenv import GenericEnvClient

    task = index % 2  # 0: ping; 1: ping-shell, with a sandbox and a bash command
    client = GenericEnvClient(base_url=url, message_timeout_s=MESSAGE_S)
    try:
        while time.monotonic() < stop_at:
            drop_after = chance.randrange(PINGS) if chance.randrange(DROP_EVERY) == 0 else None
            try:
                started = await client.reset(split="train", index=task, timeout_s=60)
                assert started.observation["error"] is None, started.observation["error"]
                for value in range(PINGS):
                    if value == drop_after:
                        await client.close()  # the injected fault: the trainer's side goes away
                        tally.drops += 1
                        client = GenericEnvClient(base_url=url, message_timeout_s=MESSAGE_S)
                        break
                    pinged = await client.step(AgentEnvAction.call_tool("ping", {"value": value}).wire())
                    assert pinged.observation["result"] == str(value), pinged.observation
                else:
                    if task == 1:
                        shell = await client.step(
                            AgentEnvAction.call_tool("bash", {"command": "cat note.txt"}).wire()
                        )
                        assert "hello" in shell.observation["result"], shell.observation
                    ended = await client.step(AgentEnvAction.end_turn("done", timeout_s=60).wire())
                    assert (ended.done, ended.reward) == (True, 1.0), ended
                    tally.episodes += 1
            except Exception as exc:
                tally.errors.append(f"session {index}: {type(exc).__name__}: {exc}")
                await client.close()
                client = GenericEnvClient(base_url=url, message_timeout_s=MESSAGE_S)
    finally:
        await client.close()


async def soak(served: Served, tally: Tally) -> None:
    stop_at = time.monotonic() + WARM_UP_S + SOAK_S
    chance = random.Random(20261130)

    async def sample_memory() -> None:
        started = time.monotonic()
        while time.monotonic() < stop_at:
            tally.rss_mib.append((time.monotonic() - started, served.rss_mib()))
            await asyncio.sleep(5)

    sessions = [session(served.url, index, stop_at, tally, chance) for index in range(SESSIONS)]
    await asyncio.wait_for(asyncio.gather(sample_memory(), *sessions), WARM_UP_S + SOAK_S + 2 * MESSAGE_S)


@pytest.mark.timeout(WARM_UP_S + SOAK_S + 600)
def test_256_sessions_playing_for_minutes_while_clients_drop_leak_nothing_and_hold_memory_flat(
    served: Served,
) -> None:
    tally = Tally()
    asyncio.run(soak(served, tally))

    settled = until(lambda: served.status()["live_episodes"] == 0 and served.status()["connections"] == 0, 60)
    warm = [rss for at, rss in tally.rss_mib if at >= WARM_UP_S]
    growth = (max(warm[-3:]) - warm[0]) / warm[0]
    print(
        f"\nsoak: {SESSIONS} sessions, {SOAK_S:.0f} s after {WARM_UP_S:.0f} s warm-up: "
        f"{tally.episodes} episodes scored, {tally.drops} clients dropped, {len(tally.errors)} other "
        f"errors; server memory {warm[0]:.0f} -> {warm[-1]:.0f} MiB (peak {max(warm):.0f}), "
        f"{growth:+.1%} after warm-up"
    )

    assert tally.errors == []
    assert tally.drops > 0 and tally.episodes > 10 * SESSIONS
    assert settled, f"left on the server: {served.status()}"
    assert until(
        lambda: list(served.sandboxes.iterdir()) == [] and child_processes(served.process.pid) == set(), 30
    )
    assert growth < MAX_GROWTH, f"server memory grew {growth:.1%} after warm-up: {tally.rss_mib}"
    assert served.process.poll() is None
    assert until(lambda: sum(t.outcome.kind == "scored" for t in served.recorded()[1]) >= tally.episodes, 60)
    lines, recorded = served.recorded()
    scored = [t for t in recorded if t.outcome.kind == "scored"]
    assert lines == len(recorded), "a recorded line is torn or not a trajectory"
    assert len(scored) == tally.episodes and len({t.id for t in recorded}) == len(recorded)
    assert len(recorded) >= tally.episodes + tally.drops
