"""A launcher that keeps every process a server starts below it, so that all of them can be killed.

Run as `python -I -S _subreaper.py PROGRAM ARGS...` (the standard library alone, so it starts in a few
milliseconds), it makes itself a child subreaper (Linux's `PR_SET_CHILD_SUBREAPER`): a process whose
parent dies is re-parented to it rather than to init, whatever session or group it made (`setsid`,
double forks). It spawns PROGRAM with its own stdin, stdout, stderr, folder and environment, forwards
SIGTERM, SIGINT and SIGHUP to it, and when PROGRAM ends it kills every process left below itself and
exits as PROGRAM did (its code, or its signal). While it runs, its owner can kill everything below it
from outside (`kill_descendants`): nothing can leave its tree but by its own death.

It works wherever Linux runs, unprivileged, with or without namespaces; what it cannot hold is a
process handed to something outside the tree (a daemon asked to start it).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
KILL_WITHIN_S = 5.0
"""How long a kill of every process below one may take (passes until none is left)."""
_PASS_PAUSE_S = 0.005
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
SPAWN_FAILED = 127


def descendants(ancestor: int) -> list[int]:
    """Every live process below `ancestor`, by the parent links Linux's /proc gives."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] not in (b"Z", b"X"):
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    below = [ancestor]
    while below:
        for child in children.get(below.pop(), ()):
            found.append(child)
            below.append(child)
    return found


def kill_descendants(ancestor: int, *, reap: bool = False) -> bool:
    """SIGKILL every process below `ancestor`, pass after pass until none is left (a process that forked
    meanwhile is caught by the next), within `KILL_WITHIN_S`; whether none is. `reap`: the caller is
    `ancestor`, which reaps the children it gets."""
    deadline = time.monotonic() + KILL_WITHIN_S
    while found := descendants(ancestor):
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if reap:
            _reap_exited()
        if time.monotonic() > deadline:
            return False
        time.sleep(_PASS_PAUSE_S)
    return True


def _reap_exited() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass


def _main(argv: list[str]) -> int:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    server = 0

    def forward(signum: int, _frame: object) -> None:
        if server:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    try:
        server = os.posix_spawn(argv[0], argv, os.environ)
    except OSError as exc:
        print(f"could not start {argv[0]}: {exc}", file=sys.stderr, flush=True)
        return SPAWN_FAILED
    # The pipes' ends are the server's alone: they close when it (and what it started) does.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == server:
            break
    kill_descendants(os.getpid(), reap=True)
    _reap_exited()
    if os.WIFSIGNALED(status):  # ended by a signal: the launcher ends by it too, with no core dumped
        killed_by = os.WTERMSIG(status)
        signal.signal(killed_by, signal.SIG_DFL)
        with contextlib.suppress(ImportError, ValueError, OSError):
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), killed_by)
        return 128 + killed_by
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
