"""Running one call of a session: within its deadline, and only while its client is still there.

A call past its deadline, or whose client disconnected, is interrupted at once: the caller gets
`InterruptedCallError` without waiting for the call to wind down, and decides what happens to its episode.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable
from typing import Any, TypeVar

_T = TypeVar("_T")


class ClientLink:
    """One WebSocket connection, as its calls see it: whether the client is still there."""

    def __init__(self) -> None:
        self.gone = False
        self.reason = "CLIENT_GONE"
        self._calls: set[asyncio.Future[Any]] = set()

    def lost(self, reason: str = "CLIENT_GONE") -> None:
        """The connection is gone (`CLIENT_GONE`) or being closed by the server (`SHUTTING_DOWN`):
        interrupt every call waiting on it."""
        if not self.gone:
            self.gone, self.reason = True, reason
        for call in list(self._calls):
            call.cancel()

    def watch(self, call: asyncio.Future[Any]) -> None:
        """Cancel `call` if the connection goes while it runs."""
        self._calls.add(call)
        call.add_done_callback(self._calls.discard)


CURRENT_LINK: contextvars.ContextVar[ClientLink | None] = contextvars.ContextVar(
    "agent_env_client_link", default=None
)
"""The link of the connection whose handler runs in this context (set by `WatchDisconnects`)."""


class InterruptedCallError(Exception):
    """A call that missed its deadline (`DEADLINE_EXCEEDED`) or lost its connection (`CLIENT_GONE`,
    `SHUTTING_DOWN`)."""

    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(code)


async def run_call(call: Awaitable[_T], timeout_s: float | None) -> _T:
    """Await `call`; past `timeout_s`, or once the client is gone, cancel it and raise."""
    task = asyncio.ensure_future(call)
    link = CURRENT_LINK.get()
    if link is not None:
        if link.gone:
            task.cancel()
        link.watch(task)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if link is not None and link.gone and (task.cancelled() or not done):
        _abandon(task)
        raise InterruptedCallError(link.reason)
    if not done:
        _abandon(task)
        raise InterruptedCallError("DEADLINE_EXCEEDED")
    return task.result()


def _abandon(task: asyncio.Future[Any]) -> None:
    """Cancel `task` without waiting for it; its outcome is read so asyncio does not warn of it."""
    task.cancel()
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
