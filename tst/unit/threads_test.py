"""Blocking work off the event loop: the shared pool, and a thread of its own for work that lasts."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_env import _threads


def test_work_on_a_thread_of_its_own_answers_with_its_result_or_its_error_while_the_pool_is_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    pool = ThreadPoolExecutor(max_workers=1)
    monkeypatch.setattr(_threads, "_pool", pool)

    def fail() -> None:
        raise ValueError("no luck")

    async def play() -> tuple[str, str]:
        holding = asyncio.ensure_future(_threads.run_sync(release.wait, 30))
        answer = await asyncio.wait_for(
            _threads.run_in_own_thread(lambda: threading.current_thread().name), 10
        )
        with pytest.raises(ValueError, match="no luck"):
            await asyncio.wait_for(_threads.run_in_own_thread(fail), 10)
        release.set()
        await holding
        return answer, threading.current_thread().name

    try:
        thread, loop_thread = asyncio.run(play())
    finally:
        release.set()
        pool.shutdown()

    assert thread != loop_thread and not thread.startswith("agent-env-sync")
