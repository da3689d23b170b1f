"""Running one call of a session: within its deadline, and only while its client is still there.

A call past its deadline, or whose client disconnected, is cancelled where it awaits, and the caller
gets `InterruptedCallError` and decides what happens to its episode. A sync tool's thread is let go
at once (Python cannot stop it); an async call answers as soon as it lets itself be cancelled.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agent_env._error_types import AgentEnvError, ErrorCode

_T = TypeVar("_T")

LONG_S = 0.01
"""How long a call runs before its connection's messages are read ahead (`ClientLink.read_ahead`)."""


class ClientLink:
    """One WebSocket connection, as its calls see it: whether the client is still there, and whether
    it holds one of the server's sessions (set by `SessionServer` when its handler makes one).

    `read_ahead` is what starts reading the connection's messages while a call runs, so that a client
    leaving mid-call is noticed; it is called only once a call has run `LONG_S`, since a quicker call
    answers before anyone could miss the client.
    """

    def __init__(self, read_ahead: Callable[[], None] | None = None) -> None:
        self.gone = False
        self.reason = ErrorCode.CLIENT_GONE
        self.holds_session = False
        self.read_ahead = read_ahead
        self._deadlines: set[asyncio.Timeout] = set()

    @property
    def busy(self) -> bool:
        """Whether a call of this connection is running."""
        return bool(self._deadlines)

    def lost(self, reason: ErrorCode = ErrorCode.CLIENT_GONE) -> None:
        """The connection is gone (`CLIENT_GONE`) or being closed by the server (`SHUTTING_DOWN`):
        interrupt every call waiting on it, by expiring its deadline now."""
        if not self.gone:
            self.gone, self.reason = True, reason
        for deadline in list(self._deadlines):
            if not deadline.expired():
                deadline.reschedule(-math.inf)  # due now: the call is cancelled at the loop's next turn

    def watch(self, deadline: asyncio.Timeout) -> None:
        """Interrupt the call under `deadline` (entered) if the connection goes while it runs."""
        self._deadlines.add(deadline)

    def forget(self, deadline: asyncio.Timeout) -> None:
        self._deadlines.discard(deadline)


CURRENT_LINK: contextvars.ContextVar[ClientLink | None] = contextvars.ContextVar(
    "agent_env_client_link", default=None
)
"""The link of the connection whose handler runs in this context (set by `WatchDisconnects`)."""


class InterruptedCallError(AgentEnvError):
    """A call that missed its deadline (`DEADLINE_EXCEEDED`) or lost its connection (`CLIENT_GONE`,
    `SHUTTING_DOWN`); the caller words the message, since it knows the call."""

    code: str

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code, code.meaning)


async def run_call(call: Awaitable[_T], timeout_s: float | None) -> _T:
    """Await `call`; past `timeout_s`, or once the client is gone, cancel it and raise.

    The call runs in the caller's task under `asyncio.timeout`, not in a task of its own: that costs
    no extra turn of the event loop per call. A call is interrupted where it awaits (a sync tool's
    thread is let go at once), so the answer comes at once from any call that lets itself be
    cancelled. A call that runs `LONG_S` has its connection read ahead, so a client leaving is seen.
    """
    link = CURRENT_LINK.get()
    if link is not None and link.gone:
        _close(call)
        raise InterruptedCallError(link.reason)
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            if link is None:
                return await call
            link.watch(deadline)
            long = (
                None
                if link.read_ahead is None
                else asyncio.get_running_loop().call_later(LONG_S, link.read_ahead)
            )
            try:
                return await call
            finally:
                link.forget(deadline)
                if long is not None:
                    long.cancel()
    except TimeoutError:
        if not deadline.expired():
            raise
        if link is not None and link.gone:
            raise InterruptedCallError(link.reason) from None
        raise InterruptedCallError(ErrorCode.DEADLINE_EXCEEDED) from None


def _close(call: Awaitable[Any]) -> None:
    """Close a coroutine that will never be awaited, so Python does not warn of it."""
    close = getattr(call, "close", None)
    if callable(close):
        close()
