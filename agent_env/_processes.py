"""Child processes read and written without blocking on any event loop, and stopped with all they
started: the local sandbox's shell and a stdio MCP server's process share these.

Each such process is a plain `subprocess.Popen` in a session of its own (`start_new_session=True`):
its pipes are non-blocking and waited on with the running loop's readers, whichever loop that is
(an asyncio subprocess belongs to the loop that started it), and it is reaped only when its owner
says, so that its process group can still be killed after it exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from pathlib import Path

from agent_env._threads import run_sync

SESSION_PASSES = 5
"""How many passes over /proc `kill_session` makes, so a process that forked while one ran is caught."""


async def ready(fd: int, *, writing: bool, or_exit: int | None = None) -> None:
    """Return once the pipe `fd` can be written (or read) without blocking, or the process whose
    pidfd is `or_exit` exited."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def mark() -> None:
        if not done.done():
            done.set_result(None)

    (loop.add_writer if writing else loop.add_reader)(fd, mark)
    if or_exit is not None:
        loop.add_reader(or_exit, mark)
    try:
        await done
    finally:
        (loop.remove_writer if writing else loop.remove_reader)(fd)
        if or_exit is not None:
            loop.remove_reader(or_exit)


def exit_watch(pid: int) -> int | None:
    """A pidfd of `pid`, readable once it exits (Linux 5.3 and later; elsewhere None)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


async def exited(process: subprocess.Popen[bytes], exit_fd: int | None, *, within_s: float) -> bool:
    """Whether `process` exits within `within_s`: watched on its pidfd `exit_fd` (which no one else
    waits on now), or without one waited for on a worker thread."""
    if exit_fd is None:
        try:
            await run_sync(process.wait, within_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within_s):
            await ready(exit_fd, writing=False)
    return process.poll() is not None


async def reap(process: subprocess.Popen[bytes], exit_fd: int | None, *, within_s: float) -> None:
    """Reap a process that was killed (it exits at once), then close the host's ends of its pipes and
    its pidfd: only once no read or write waits on them. Never raises."""
    with contextlib.suppress(Exception):
        await run_sync(process.wait, within_s)
    for pipe in (process.stdin, process.stdout, process.stderr):
        with contextlib.suppress(OSError):
            if pipe is not None:
                pipe.close()
    if exit_fd is not None:
        with contextlib.suppress(OSError):
            os.close(exit_fd)


def kill_group(group: int) -> None:
    """SIGKILL every process of the process group `group`; nothing if there is none."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def kill_session(session: int) -> None:
    """Kill every process of `session` (Linux's /proc names each one's), a few passes over it, so a
    process that forked while a pass ran is caught by the next."""
    proc = Path("/proc")
    for _ in range(SESSION_PASSES):
        found = False
        with contextlib.suppress(OSError):
            for entry in proc.iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                if int(fields[3]) == session:
                    found = True
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(entry.name), signal.SIGKILL)
        if not found:
            return
