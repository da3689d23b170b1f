"""4. Teardown after a crash: a trainer with live episodes, each mid-command, is killed with SIGKILL.

Timed from the kill until the server has no episode (live or tearing down), no sandbox folder, no
process of those commands, and no sandbox container left. Target: under 5 s for 64 episodes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import ROOT, Figure, Results, docker_engine, server, until
from bench.crash_trainer import SLEEPER

TARGET_S = 5.0
READY_S = 300.0


def sleepers() -> int:
    """Processes, on the host or in a container, running the crash trainer's command."""
    count = 0
    wanted = SLEEPER.replace(" ", "\0").encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            count += cmdline.read_bytes().rstrip(b"\0") == wanted
        except OSError:
            continue
    return count


def containers() -> int:
    import docker

    from agent_env.sandbox import SANDBOX_LABEL

    client = docker.from_env()
    try:
        return len(client.api.containers(all=True, filters={"label": SANDBOX_LABEL}))
    finally:
        client.close()


def clean(served: Any, with_docker: bool) -> bool:
    status = served.status()
    return (
        status["live_episodes"] == 0
        and status["tearing_down"] == 0
        and not any(served.sandboxes.glob("agent-env-sandbox-*"))
        and sleepers() == 0
        and (not with_docker or containers() == 0)
    )


def crash(served: Any, episodes: int, with_docker: bool) -> float:
    trainer = subprocess.Popen(
        [sys.executable, "-m", "bench.crash_trainer", served.url, str(episodes)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert trainer.stdout is not None and trainer.stdout.readline() == "ready\n", "the trainer failed"
        if until(lambda: sleepers() == episodes, READY_S) is None:
            raise RuntimeError(f"only {sleepers()} of {episodes} commands started")
        trainer.send_signal(signal.SIGKILL)
        trainer.wait(30)
        took = until(lambda: clean(served, with_docker), 60.0, poll_s=0.02)
        return float("nan") if took is None else took
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    episodes = 8 if quick else 64
    with server("bundle", workdir=workdir) as served:
        took = crash(served, episodes, with_docker=False)
    results.add(Figure("crash", f"{episodes} episodes, local sandbox: all gone after", took, "s", TARGET_S))
    if not docker_engine():
        results.add(Figure("crash", "Docker sandbox", float("nan"), "s", note="no Docker engine"))
        return
    episodes = 4 if quick else 64
    with server("bundle", sandbox="docker", workdir=workdir) as served:
        took = crash(served, episodes, with_docker=True)
    results.add(Figure("crash", f"{episodes} episodes, Docker sandbox: all gone after", took, "s", TARGET_S))
