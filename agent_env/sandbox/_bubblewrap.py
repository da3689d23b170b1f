"""bubblewrap (`bwrap`, Debian's `bubblewrap`) around the local sandbox's commands.

Confined, a command sees the machine read-only but for its episode's folder, has a /tmp of its own,
no network (a network namespace with only a loopback, down), and a process namespace of its own:
whatever it starts ends when it returns, even a process that left its group with `setsid`. It still
runs as the server's user and can read what that user can: the local sandbox is not an isolation
boundary, bubblewrap or not. Use the Docker sandbox for bundles you do not trust.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from agent_env._error_types import SandboxUnavailableError

ISOLATIONS = ("auto", "bubblewrap", "none")
INSTALL_HINT = "apt-get install bubblewrap"
_PROBE_TIMEOUT_S = 10

log = logging.getLogger("agent_env.sandbox")


def bubblewrap_for(isolation: str) -> str | None:
    """The `bwrap` to confine commands with under `isolation`, or None to run them as they are."""
    if isolation == "none":
        return None
    found, why = _probe()
    if found is None and isolation == "bubblewrap":
        raise SandboxUnavailableError(
            f'[sandbox] isolation = "bubblewrap", but {why}: {INSTALL_HINT}, or set isolation = "auto"'
        )
    _say_once(found, why)
    return found


def confined(bwrap: str, root: Path, argv: list[str], *, as_pid_1: bool = False) -> list[str]:
    """`argv` run by `bwrap` with only `root` writable, no network and a process namespace of its own
    (`as_pid_1`: with `argv` its pid 1, which no process inside it can kill, rather than bwrap's own)."""
    wrapper = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    wrapper += ["--bind", str(root), str(root), "--chdir", str(root)]
    wrapper += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    if os.geteuid() == 0:  # root keeps its capabilities in the sandbox unless they are dropped
        wrapper += ["--cap-drop", "ALL"]
    if as_pid_1:
        wrapper += ["--as-pid-1"]
    return [*wrapper, "--", *argv]


@functools.cache
def _probe() -> tuple[str | None, str]:
    """Whether bwrap is installed and can make its namespaces here (a container may forbid them)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            confined(bwrap, Path(tempfile.gettempdir()), ["true"]),
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bubblewrap cannot run here ({exc})"
    if done.returncode != 0:
        return None, f"bubblewrap cannot run here ({done.stderr.strip() or f'exit {done.returncode}'})"
    return bwrap, ""


@functools.cache
def _say_once(bwrap: str | None, why: str) -> None:
    if bwrap is not None:
        log.info(
            "local sandbox: commands confined by bubblewrap (no network, only the episode's folder "
            "writable); it is still not an isolation boundary: use the docker sandbox for untrusted bundles"
        )
    else:
        log.warning(
            "local sandbox: not an isolation boundary, and unconfined: %s (%s to confine commands), "
            "so a command can use the network and write wherever this user can; use the docker sandbox "
            "for untrusted bundles",
            why,
            INSTALL_HINT,
        )
