"""What every benchmark shares: server processes, percentiles, a process's memory, bounded waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
START_S = 90.0
"""A bound on a server's start: importing OpenEnv alone takes about 8 s."""


@dataclass
class Server:
    process: subprocess.Popen[str]
    port: int
    sandboxes: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_mib(self) -> float:
        """The server process's resident memory."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS for the server")

    def cpu_s(self) -> float:
        """CPU seconds the server process has used so far (user and system)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def status(self) -> dict[str, Any]:
        answer: dict[str, Any] = httpx.get(f"{self.url}/yard/status", timeout=10).json()
        return answer


@contextmanager
def server(
    kind: str,
    *,
    sandbox: str = "local",
    capacity: int = 512,
    workdir: Path,
    record: bool = False,
    warm: int | None = None,
) -> Iterator[Server]:
    """A server process (`bench.serve`), stopped with SIGTERM after use; its sandboxes go under `workdir`,
    and so do its trajectories if it `record`s. `warm` is its Docker sandboxes' warm pool."""
    sandboxes = (
        workdir
        / f"sandboxes-{kind}-{sandbox}{'-recording' if record else ''}{f'-warm{warm}' if warm else ''}"
    )
    sandboxes.mkdir(parents=True, exist_ok=True)
    recording = ["--record", str(workdir / f"trajectories-{kind}-{sandbox}")] if record else []
    recording += ["--warm", str(warm)] if warm else []
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.serve",
            kind,
            "--sandbox",
            sandbox,
            "--capacity",
            str(capacity),
            *recording,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(sandboxes), "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"the {kind} server did not start (exit {process.poll()})")
        yield Server(process, int(line.split()[1]), sandboxes)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


QUIET_POLL_S = 0.1
QUIET_CPU_S = 0.005
"""A server that used less CPU than this over one poll is quiet."""


def settle(servers: Sequence[Server], within_s: float = 5.0) -> None:
    """Wait until every server is quiet (the last round's sessions torn down), at most `within_s`:
    what one round leaves to clean up then does not fall on the next round, run on another server."""
    last = [served.cpu_s() for served in servers]
    deadline = time.perf_counter() + within_s
    while time.perf_counter() < deadline:
        time.sleep(QUIET_POLL_S)
        now = [served.cpu_s() for served in servers]
        if all(after - before < QUIET_CPU_S for before, after in zip(last, now, strict=True)):
            return
        last = now


def until(condition: Callable[[], bool], within_s: float, poll_s: float = 0.005) -> float | None:
    """Seconds until `condition` held, or None when it did not within `within_s`."""
    start = time.perf_counter()
    while not condition():
        if time.perf_counter() - start > within_s:
            return None
        time.sleep(poll_s)
    return time.perf_counter() - start


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class Figure:
    """One measured figure, with its target when it has one; `lower` says whether less is better."""

    section: str
    name: str
    value: float
    unit: str
    target: float | None = None
    lower: bool = True
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        met = self.value <= self.target if self.lower else self.value >= self.target
        return "met" if met else "MISSED"


@dataclass
class Results:
    figures: list[Figure] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    throughput: dict[str, dict[int, float]] = field(default_factory=dict)

    def add(self, *figures: Figure) -> None:
        self.figures.extend(figures)


def rollout(env: Any, index: int) -> tuple[Any, dict[str, Any]]:
    """A new instance of the toolset class of task `index` (train split), and the row TRL resets it with."""
    row = dict(env.dataset[index])
    toolset = row.pop("environment")
    return env.factory[toolset](), row


def docker_engine() -> bool:
    """Whether a Docker engine answers here, with the sandbox image (the Docker figures need both)."""
    try:
        from agent_env.sandbox import DockerSandboxProvider

        DockerSandboxProvider()
    except Exception:
        return False
    return True
