"""Blocking work off the event loop.

Sync tools, env hooks and verifiers run here, never on a loop thread. The pool is the framework's own
rather than asyncio's default one, whose size (cores + 4) would cap a server of many sessions at a
handful of concurrent sync calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")

_MAX_WORKERS = 64
_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=_MAX_WORKERS, thread_name_prefix="agent-env-sync")
    return _pool


async def run_sync(fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Run `fn` in the framework's thread pool and await its result."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_executor(), call)


async def call_maybe_async(fn: Callable[..., object], /, *args: object, **kwargs: object) -> object:
    """Await `fn` if it is a coroutine function; otherwise run it off the loop."""
    if asyncio.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
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
