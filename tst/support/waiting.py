"""Bounded waits the tests share: for a condition to hold, and for a process to be gone."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

WAIT_S = 5.0
_POLL_S = 0.01


def child_processes(parent: int | None = None) -> set[int]:
    """The live processes whose parent is `parent` (by default, this test process)."""
    me = str(parent if parent is not None else os.getpid())
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[1] == me and fields[0] not in ("Z", "X"):
                children.add(int(stat.parent.name))
    return children


def running(argument: str) -> list[int]:
    """The host's pids of live processes with `argument` on their command line.

    A sandboxed command's own pids (`$$`, `$!`) are of bubblewrap's process namespace, not the
    host's; a test marks what it starts with a distinctive argument (`sleep 30.11`) and looks for it.
    """
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError, ValueError):
            if argument.encode() in cmdline.read_bytes().split(b"\0") and alive(int(cmdline.parent.name)):
                found.append(int(cmdline.parent.name))
    return found


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


async def eventually(condition: Callable[[], bool], within: float = WAIT_S) -> bool:
    """Whether `condition` holds within `within` seconds, checking it without blocking the loop."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(_POLL_S)
    return True


async def written(path: Path, within: float = WAIT_S) -> str:
    """The text of `path` once a command has written a whole line to it; fails past `within` seconds."""

    def whole_line() -> bool:
        return path.is_file() and _text(path).endswith("\n")

    if not await eventually(whole_line, within):
        raise AssertionError(f"{path} was not written within {within} s")
    return _text(path)


def _text(path: Path) -> str:
    return path.read_text()


def until(condition: Callable[[], bool], within: float = WAIT_S) -> bool:
    """Whether `condition` holds within `within` seconds, checking it from a thread that may block."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)
    return True


T = TypeVar("T")


def within(seconds: float, call: Callable[[], T]) -> T:
    """What `call` returns or raises, if it is done within `seconds`; else `TimeoutError`, its thread
    left behind as a daemon (for calls that may block for good, such as opening a FIFO)."""
    answer: Future[T] = Future()

    def run() -> None:
        try:
            answer.set_result(call())
        except BaseException as exc:
            answer.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return answer.result(timeout=seconds)
