"""`agent-env serve` as a process of its own, as a user runs it: on a free loopback port, stopped after."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import select
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

AGENT_ENV = Path(sys.executable).parent / "agent-env"
STARTED_S = 60.0
STOPPED_S = 60.0


@contextlib.contextmanager
def agent_env_serve(
    bundle: Path, *options: str, log: Path, tmpdir: Path, descriptors: int | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`agent-env serve BUNDLE --port 0 OPTIONS...` and the URL it prints; stopped with SIGTERM (then
    killed, past `STOPPED_S`) when the block ends. Its log goes to `log`, its sandboxes under `tmpdir`;
    `descriptors`, if given, is its descriptor limit (soft and hard: it cannot raise it)."""
    with _started(bundle, options, log, tmpdir, descriptors) as process:
        yield process, listening(process)


@contextlib.contextmanager
def agent_env_serves(
    servers: Sequence[tuple[Path, Sequence[str]]], *, log: Path, tmpdir: Path, name: str = "serve"
) -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    """As `agent_env_serve`, for several servers started all at once (a bundle and options each; a
    later `--port` or `--host` wins over the defaults); their logs are `log/NAME-I.log`."""
    with contextlib.ExitStack() as stack:
        started = [
            stack.enter_context(_started(bundle, options, log / f"{name}-{index}.log", tmpdir))
            for index, (bundle, options) in enumerate(servers)
        ]
        yield [(process, listening(process)) for process in started]


@contextlib.contextmanager
def _started(
    bundle: Path, options: Sequence[str], log: Path, tmpdir: Path, descriptors: int | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    def limited() -> None:
        if descriptors is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    with log.open("wb") as written:
        process = subprocess.Popen(
            [str(AGENT_ENV), "serve", str(bundle), "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=written,
            env={**os.environ, "TMPDIR": str(tmpdir)},
            preexec_fn=limited if descriptors is not None else None,
        )
        try:
            yield process
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL past `STOPPED_S`; nothing for a process already gone."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOPPED_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def listening(process: subprocess.Popen[bytes]) -> str:
    """The URL in the first line the server prints, within `STARTED_S`."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], STARTED_S)
    assert ready, f"agent-env serve printed nothing within {STARTED_S:g} s"
    printed = process.stdout.readline().decode()
    found = re.search(r"http://[^\s,]+", printed)
    assert found, f"agent-env serve printed {printed!r}"
    return found.group(0)
