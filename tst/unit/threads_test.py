"""Blocking work off the event loop: the shared pool, and a thread of its own for work that lasts."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_env import _threads

ROOT = Path(__file__).parents[2]
EXIT_S = 60.0
"""A bound on a fresh interpreter's run: a pool whose threads are joined at exit would hang it."""


def test_work_on_a_thread_of_its_own_answers_with_its_result_or_its_error_while_the_pool_is_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    monkeypatch.setattr(_threads, "_pool", _threads.Workers(1))

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

    assert thread != loop_thread and not thread.startswith("agent-env-sync")


def test_a_blocking_call_answers_on_the_loop_with_its_result_or_its_error_off_the_loop_thread() -> None:
    def fail() -> None:
        raise ValueError("no luck")

    async def play() -> tuple[str, str]:
        name = await _threads.run_sync(lambda: threading.current_thread().name)
        with pytest.raises(ValueError, match="no luck"):
            await _threads.run_sync(fail)
        return name, threading.current_thread().name

    worker, loop_thread = asyncio.run(play())

    assert worker.startswith("agent-env-sync") and worker != loop_thread


def test_a_call_whose_caller_gave_up_runs_on_and_its_worker_then_takes_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_threads, "_pool", _threads.Workers(1))
    release = threading.Event()

    async def play() -> str:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(_threads.run_sync(release.wait, 30), 0.05)
        release.set()
        return await asyncio.wait_for(_threads.run_sync(lambda: "next"), 10)

    assert asyncio.run(play()) == "next"


def test_workers_start_as_calls_need_them_up_to_their_limit_and_a_call_beyond_waits_its_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers = _threads.Workers(2, name="agent-env-test")
    monkeypatch.setattr(_threads, "_pool", workers)
    release = threading.Event()
    running = threading.Semaphore(0)

    def hold() -> str:
        running.release()
        release.wait(30)
        return threading.current_thread().name

    async def play() -> tuple[bool, list[str]]:
        calls = [asyncio.ensure_future(_threads.run_sync(hold)) for _ in range(3)]
        for _ in range(2):
            assert await asyncio.to_thread(running.acquire, True, 10)
        third_waited = not await asyncio.to_thread(running.acquire, True, 0.2)
        release.set()
        return third_waited, list(await asyncio.wait_for(asyncio.gather(*calls), 10))

    third_waited, names = asyncio.run(play())

    assert third_waited
    assert sorted(set(names)) == ["agent-env-test-1", "agent-env-test-2"]


def test_a_blocking_call_sees_the_context_of_its_caller() -> None:
    seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="nothing")

    async def play() -> str:
        seen.set("the caller's")
        return await _threads.run_sync(seen.get)

    assert asyncio.run(play()) == "the caller's"


def test_a_process_whose_blocking_call_never_returns_still_exits_once_its_caller_gave_up() -> None:
    given_up = """
import asyncio, threading
from agent_env import _threads

async def main():
    try:
        await asyncio.wait_for(_threads.run_sync(threading.Event().wait), 0.1)
    except TimeoutError:
        print("given up", flush=True)

asyncio.run(main())
"""
    ended = subprocess.run(
        [sys.executable, "-c", given_up],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=EXIT_S,
        check=False,
    )

    assert (ended.returncode, ended.stdout) == (0, "given up\n"), ended.stderr
