"""A launcher that keeps every process a server starts below it, so that all of them can be killed.

Run as `python -I -S _subreaper.py PROGRAM ARGS...` (the standard library alone, so it starts in a few
milliseconds), it makes itself a child subreaper (Linux's `PR_SET_CHILD_SUBREAPER`): a process whose
parent dies is re-parented to it rather than to init, whatever session or group it made (`setsid`,
double forks). It spawns PROGRAM (looked up on PATH unless it holds a slash) with its own stdin,
stdout, stderr, folder and environment, and the signals Python ignores back to their defaults; forwards
SIGTERM, SIGINT, SIGHUP and SIGUSR1 to it, and when PROGRAM ends it kills every process left below
itself and exits as PROGRAM did (its code, or its signal). While it runs, its owner can kill
everything below it from outside (`kill_descendants`), or all but PROGRAM (`kill_leftovers`: what a
command PROGRAM ran left behind): nothing can leave its tree but by its own death.

It works wherever Linux runs, unprivileged, with or without namespaces; what it cannot hold is a
process handed to something outside the tree (a daemon asked to start it).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
KILL_WITHIN_S = 5.0
"""How long a kill of every process below one may take (passes until none is left)."""
_PASS_PAUSE_S = 0.005
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1)
SPAWN_FAILED = 127
_RESTORED = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name))


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


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, a process of one thread (Linux lists its main thread's, in
    /proc/PID/task/PID/children); none once it is gone, or where Linux does not list them."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as listed:
            return [int(child) for child in listed.read().split()]
    except (OSError, ValueError):
        return []


def leftovers(launcher: int) -> list[int]:
    """Every live process below the launcher `launcher` but its PROGRAM (its eldest child): what the
    commands PROGRAM ran left behind, in their session or out of it (`setsid`, then handed to the
    launcher), found child by child, so that one whose parent is being killed is found under it. The
    launcher's children are read again after the walk: one whose parent exited during it was handed
    to the launcher after the first read, and is no longer under its parent. Three small files are
    read when there is none."""
    spawned = children(launcher)
    if not spawned:
        return []
    program = spawned[0] if len(spawned) == 1 else min(spawned, key=_started)
    found: list[int] = []
    walked = set(spawned)
    below = [pid for pid in spawned if pid != program] + children(program)
    while True:
        while below:
            pid = below.pop()
            if _alive(pid):
                found.append(pid)
            below.extend(children(pid))
        below = [pid for pid in children(launcher) if pid not in walked]
        if not below:
            return found
        walked.update(below)


def kill_leftovers(launcher: int) -> bool:
    """SIGKILL every process below the launcher `launcher` but its PROGRAM (`leftovers`), pass after
    pass until two passes in a row find none (one whose parent died between the reads of a pass is
    handed to the launcher by the next), within `KILL_WITHIN_S`; whether none is left."""
    deadline = time.monotonic() + KILL_WITHIN_S
    clean = 0
    while clean < 2:
        found = leftovers(launcher)
        clean = 0 if found else clean + 1
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return False
        time.sleep(_PASS_PAUSE_S)
    return True


def _stat(pid: int) -> list[bytes]:
    """The fields of /proc/PID/stat after the command's name (state first); none once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] not in (b"Z", b"X")


def _started(pid: int) -> float:
    """When `pid` started, in clock ticks since boot (a process gone: never)."""
    fields = _stat(pid)
    return float(fields[19]) if len(fields) > 19 else math.inf


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
        # Found on PATH unless named by a path; with the signals Python ignores at its start (and a
        # child would inherit ignored) back to their defaults, as subprocess's restore_signals does.
        server = os.posix_spawnp(argv[0], argv, os.environ, setsigdef=_RESTORED)
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
            server = 0  # reaped: its pid is no longer its own to signal
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
