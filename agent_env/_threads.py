"""Blocking work off the event loop.

Sync tools, env hooks and verifiers run here, never on a loop thread. The pool is the framework's own
rather than the standard library's `ThreadPoolExecutor` (through `loop.run_in_executor`, or asyncio's
default one, whose size, cores + 4, would also cap a server of many sessions at a handful of
concurrent sync calls), for what the executor would lose and what it would cost:

- An executor's threads are joined when the interpreter exits, so one sync call that never returns
  (Python cannot stop its thread) would hold the process's exit for ever; these workers are daemon
  threads (`threads_test`: a process whose blocking call never returns still exits).
- An executor's `Future` takes a lock on both threads and is chained to a second future on the loop's
  side on every call; here a call is one queue put and one `call_soon_threadsafe`. Measured side by
  side (`make bench`, section `threads`: a call that does nothing, the same pool size, alternating
  rounds on one loop; 2 cores shared with other work, 2026-12-06), the executor took 124 µs a round
  trip against 83 µs here (1.5x), and with 64 calls at once 39 µs of CPU a call against 18 (2.4x).
  A sync tool call takes that path once: 41 µs more of its latency, 21 µs more of the server's CPU,
  against the 0.88 ms and 0.53 ms a tool call through AgentEnv takes on the same machine
  (`overhead`, (c)): 4-5%, above the 3% a primitive of our own must save to stay.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")

_MAX_WORKERS = 64


class _Job:
    """One blocking call, and the loop future its outcome settles."""

    __slots__ = ("call", "done", "loop")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, done: asyncio.Future[Any], call: Callable[[], Any]
    ) -> None:
        self.loop, self.done, self.call = loop, done, call

    def run(self) -> Callable[[], None]:
        """Make the call; what settles its future, to be handed to the loop."""
        try:
            result = self.call()
        except BaseException as exc:
            return functools.partial(_settle, self.done, None, exc)
        return functools.partial(_settle, self.done, result, None)

    def hand_over(self, outcome: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            self.loop.call_soon_threadsafe(outcome)


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.done():  # the caller gave up (a deadline, a cancel): the result goes nowhere
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


class Workers:
    """Up to `limit` daemon threads that take blocking calls from one queue, started as needed.

    A worker between jobs leaves a token in `_idle`; a job takes one if there is one, else starts a
    worker. The tokens are a deque, whose `append` and `pop` are atomic, so the loop's side takes no
    lock a worker could hold: that lock, contended, was a twentieth of the loop's busy time at 64
    sessions (`make bench`).
    """

    def __init__(self, limit: int = _MAX_WORKERS, *, name: str = "agent-env-sync") -> None:
        self.limit = limit
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._idle: collections.deque[None] = collections.deque()
        self._lock = threading.Lock()
        self._started = 0

    def submit(self, job: _Job) -> None:
        self._jobs.put(job)
        try:
            self._idle.pop()  # a worker between jobs takes it
            return
        except IndexError:
            pass
        with self._lock:
            if self._started == self.limit:  # it waits its turn
                return
            self._started += 1
            name = f"{self._name}-{self._started}"
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        # The token goes back before the loop is woken, so that once woken it finds this thread
        # already back in `get`, where it lets go of the GIL, rather than waiting on it for a while.
        while True:
            job = self._jobs.get()
            outcome = job.run()
            self._idle.append(None)
            job.hand_over(outcome)


_pool = Workers()


async def run_sync(fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Run `fn` on the framework's workers, in a copy of this context, and await its result."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()
    _pool.submit(_Job(loop, done, functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)))
    return await done


async def call_maybe_async(fn: Callable[..., object], /, *args: object, **kwargs: object) -> object:
    """Await `fn` if it is a coroutine function; otherwise run it off the loop."""
    return await call_as(asyncio.iscoroutinefunction(fn), fn, *args, **kwargs)


async def call_as(is_async: bool, fn: Callable[..., object], /, *args: object, **kwargs: object) -> object:
    """`call_maybe_async` for a caller that knows already whether `fn` is a coroutine function (a
    tool, called many times: the look-up is a microsecond on the loop, every call)."""
    if is_async:
        return await fn(*args, **kwargs)  # type: ignore[misc]
    result = await run_sync(fn, *args, **kwargs)
    if asyncio.iscoroutine(result):
        return await result
    return result


async def run_in_own_thread(fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Run `fn` on a daemon thread of its own and await its result.

    For blocking work that may last as long as a command runs (reading a container's output): on
    the shared pool, enough of those at once would hold every thread, and the teardown that would end
    them could never run.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.done():
            outcome()

    def work() -> None:
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            outcome = functools.partial(done.set_exception, exc)
        else:
            outcome = functools.partial(done.set_result, result)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True).start()
    return await done
