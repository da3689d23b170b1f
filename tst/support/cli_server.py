"""`agent-env serve` as a process of its own, as a user runs it: on a free loopback port, stopped after."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

AGENT_ENV = Path(sys.executable).parent / "agent-env"
STARTED_S = 60.0
STOPPED_S = 60.0


@contextlib.contextmanager
def agent_env_serve(
    bundle: Path, *options: str, log: Path, tmpdir: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`agent-env serve BUNDLE --port 0 OPTIONS...` and the URL it prints; stopped with SIGTERM (then
    killed, past `STOPPED_S`) when the block ends. Its log goes to `log`, its sandboxes under `tmpdir`."""
    with log.open("wb") as written:
        process = subprocess.Popen(
            [str(AGENT_ENV), "serve", str(bundle), "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=written,
            env={**os.environ, "TMPDIR": str(tmpdir)},
        )
        try:
            yield process, _listening(process)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOPPED_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _listening(process: subprocess.Popen[bytes]) -> str:
    """The URL in the first line the server prints, within `STARTED_S`."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], STARTED_S)
    assert ready, f"agent-env serve printed nothing within {STARTED_S:g} s"
    printed = process.stdout.readline().decode()
    found = re.search(r"http://[^\s,]+", printed)
    assert found, f"agent-env serve printed {printed!r}"
    return found.group(0)
