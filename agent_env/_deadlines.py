"""Deadlines for many short calls: one watchdog per event loop rather than a timer per call.

`asyncio.timeout` schedules a timer and cancels it on every call; for a call of a few hundred
microseconds that heap entry, pushed, cancelled and swept, is a tenth of the call's cost on the loop
(`make bench`). Here a call under a `Deadline` is one entry in its loop's watchdog; while any entry is
there, the watchdog wakes every `TICK_S`, expires the calls whose time has come and tells those that
asked (`on_long`) that they have run `LONG_S`. A call is cancelled by the protocol `asyncio.timeout`
uses, so a deadline raises `TimeoutError` exactly as it does, at most `TICK_S` late.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

from agent_env._errors import StateError

TICK_S = 0.01
"""How often the watchdog looks at the calls it watches: the most a deadline can be late."""

LONG_S = 0.01
"""How long a call runs before its `on_long` callback is called."""


class Deadline:
    """`async with Deadline(timeout_s):` raises `TimeoutError` once `timeout_s` has passed (`None`:
    never), or at once after `expire()`. `on_long` is called once, if the call lasts `LONG_S`.

    It cancels the task it runs in as `asyncio.timeout` does, by asyncio's own protocol for it
    (`Task.cancelling` and `uncancel`): a cancel from outside stays a cancel. It is that protocol
    without `asyncio.Timeout`'s state machine and timer, which cost a call 1.7 µs on the loop.
    """

    __slots__ = ("_cancelling", "_expired", "_on_long", "_task", "_timeout_s", "_watchdog", "due", "long_at")

    def __init__(self, timeout_s: float | None, *, on_long: Callable[[], None] | None = None) -> None:
        self._timeout_s = timeout_s
        self._on_long = on_long
        self._task: asyncio.Task[Any] | None = None
        self._cancelling = 0
        self._expired = False
        self._watchdog: _Watchdog | None = None
        self.due: float | None = None
        self.long_at: float | None = None

    async def __aenter__(self) -> Deadline:
        task = asyncio.current_task()
        if task is None:
            raise StateError("a Deadline must be entered in a task")
        self._task, self._cancelling = task, task.cancelling()
        if self._timeout_s is not None or self._on_long is not None:
            loop = asyncio.get_running_loop()
            now = loop.time()
            if self._timeout_s is not None:
                self.due = now + self._timeout_s
            if self._on_long is not None:
                self.long_at = now + LONG_S
            self._watchdog = _watchdog(loop)
            self._watchdog.watch(self)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._watchdog is not None:
            self._watchdog.forget(self)
        task, self._task = self._task, None
        # uncancel first, whatever the call raised: the cancel was this deadline's own
        expired_here = self._expired and task is not None and task.uncancel() <= self._cancelling
        if expired_here and kind is asyncio.CancelledError:
            raise TimeoutError from error

    def expire(self) -> None:
        """End the call now: it raises `TimeoutError` where it awaits. Outside the call, or twice, it
        does nothing."""
        if self._task is not None and not self._expired:
            self._expired = True
            self._task.cancel()

    def expired(self) -> bool:
        """Whether the deadline passed (or `expire` was called) while the call ran."""
        return self._expired

    def _check(self, now: float) -> bool:
        """Act on what is due at `now`; whether there is still something to watch for."""
        if self.long_at is not None and now >= self.long_at:
            self.long_at = None
            assert self._on_long is not None
            self._on_long()
        if self.due is not None and now >= self.due:
            self.due = None
            self.expire()
        return self.due is not None or self.long_at is not None


class _Watchdog:
    """The deadlines under way on one loop, looked at every `TICK_S` while there are any."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._watched: set[Deadline] = set()
        self._tick: asyncio.TimerHandle | None = None

    def watch(self, deadline: Deadline) -> None:
        self._watched.add(deadline)
        if self._tick is None:
            self._tick = self._loop.call_later(TICK_S, self._check)

    def forget(self, deadline: Deadline) -> None:
        self._watched.discard(deadline)

    def _check(self) -> None:
        now = self._loop.time()
        for deadline in list(self._watched):
            if not deadline._check(now):
                self._watched.discard(deadline)
        self._tick = self._loop.call_later(TICK_S, self._check) if self._watched else None


_WATCHDOGS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watchdog] = weakref.WeakKeyDictionary()


def _watchdog(loop: asyncio.AbstractEventLoop) -> _Watchdog:
    watchdog = _WATCHDOGS.get(loop)
    if watchdog is None:
        watchdog = _WATCHDOGS[loop] = _Watchdog(loop)
    return watchdog
