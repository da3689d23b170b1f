"""Concurrent callers' requests run in batches: one call of a batch function answers up to `size` of them.

The first caller in the queue leads: it waits up to `wait_s` for the batch to fill (or not at all once
`size` are queued), runs the batch for everyone in it, and hands each caller its own answer. The
others wait for their answer, or for their turn to lead the next batch. A lone caller is held at most
`wait_s`, so nothing waits on a caller that never comes; with `size` 1 every call runs alone, in turn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from agent_env._errors import ArgumentError

Request = TypeVar("Request")
Answer = TypeVar("Answer")

GATHER_WAIT_S = 0.02
"""How long a batch's leader waits for it to fill: far under one generation's time, yet long enough for
the callers just answered to come back from their tool calls (at 5 ms, eval's 8 episodes split into
batches of 2 and 6)."""


class _Pending(Generic[Request, Answer]):
    """One caller's request, and its answer or error once its batch has run."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.answer: Answer | None = None
        self.error: BaseException | None = None
        self.done = False


class Gatherer(Generic[Request, Answer]):
    """`run` maps a batch of requests to their answers, in order; a call of the gatherer is one request."""

    def __init__(
        self, run: Callable[[list[Request]], list[Answer]], size: int, wait_s: float = GATHER_WAIT_S
    ) -> None:
        if size < 1:
            raise ArgumentError(f"batch must be >= 1 (the requests one generation answers), got {size}")
        self._run, self._size, self._wait_s = run, size, wait_s
        self._changed = threading.Condition()
        self._queue: list[_Pending[Request, Answer]] = []
        self._running = False

    def __call__(self, request: Request) -> Answer:
        """The answer to `request`, run in a batch with whoever else waits; `run`'s error if it failed."""
        mine: _Pending[Request, Answer] = _Pending(request)
        batch = self._join(mine)
        if batch is not None:
            self._lead(batch)
        if mine.error is not None:
            raise mine.error
        return mine.answer  # type: ignore[return-value]  # set for every request whose run did not fail

    def _join(self, mine: _Pending[Request, Answer]) -> list[_Pending[Request, Answer]] | None:
        """Queue `mine`; the batch to run once it leads one, None once another's batch answered it."""
        with self._changed:
            self._queue.append(mine)
            self._changed.notify_all()
            while not mine.done and (self._running or self._queue[0] is not mine):
                self._changed.wait()
            if mine.done:
                return None
            self._running = True
            deadline = time.monotonic() + self._wait_s
            while len(self._queue) < self._size and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
            batch, self._queue = self._queue[: self._size], self._queue[self._size :]
            return batch

    def _lead(self, batch: list[_Pending[Request, Answer]]) -> None:
        """Run the batch outside the lock (others queue meanwhile); every caller in it gets its outcome."""
        try:
            answers = self._run([pending.request for pending in batch])
            for pending, answer in zip(batch, answers, strict=True):
                pending.answer = answer
        except BaseException as exc:  # each caller in the batch raises it, the leader too
            for pending in batch:
                pending.error = exc
        finally:
            with self._changed:
                for pending in batch:
                    pending.done = True
                self._running = False
                self._changed.notify_all()
