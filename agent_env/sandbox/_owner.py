"""Which server made a sandbox container, and whether that server still runs.

Every container a server starts carries labels naming its host, its pid and that process's start
(the machine's boot and the pid's start time, so that a pid the kernel reused for another process
does not pass for the server). A container whose server is gone, killed with SIGKILL say, was left
behind: the next server on the host removes it at start.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping
from pathlib import Path

from agent_env.sandbox._docker_engine import SANDBOX_LABEL

HOST_LABEL = f"{SANDBOX_LABEL}.server-host"
PID_LABEL = f"{SANDBOX_LABEL}.server-pid"
START_LABEL = f"{SANDBOX_LABEL}.server-start"


def owner_labels() -> dict[str, str]:
    """The labels that name this process as the owner of a container."""
    pid = os.getpid()
    return {
        SANDBOX_LABEL: "1",
        HOST_LABEL: this_host(),
        PID_LABEL: str(pid),
        START_LABEL: _start_of(pid) or "",
    }


def owner_alive(labels: Mapping[str, str]) -> bool:
    """Whether the process the labels name still runs on this host (assumed of a container of another
    host, whose processes cannot be seen from here)."""
    if labels.get(HOST_LABEL, this_host()) != this_host():
        return True
    try:
        pid = int(labels.get(PID_LABEL, ""))
    except ValueError:
        return True  # no owner named: not a container of a server's
    start = _start_of(pid)
    if start is None:
        return False
    return start == "" or labels.get(START_LABEL, "") in ("", start)


@functools.cache
def this_host() -> str:
    return socket.gethostname()


def _start_of(pid: int) -> str | None:
    """`pid`'s start, as the boot it started in and its start time since that boot; None once it
    ended; "" where there is no /proc to tell when it started."""
    if not Path("/proc/self/stat").exists():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return f"{_boot()}:{fields[19]}"


@functools.cache
def _boot() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"
