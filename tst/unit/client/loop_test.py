"""The trainer side's client loop: work handed from any thread, and its `Answer` waited on."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_env._errors import TimedOutError
from agent_env.client._loop import ClientLoop

pytestmark = pytest.mark.needs("trl_installed")


async def _double(value: int) -> int:
    await asyncio.sleep(0)
    return value * 2


async def _fail() -> None:
    await asyncio.sleep(0)
    raise ValueError("no such tool")


def test_work_answers_with_its_result_each_time_it_is_asked() -> None:
    answer = ClientLoop("test-loop").submit(_double(21))

    assert answer.result(timeout_s=10) == 42
    assert answer.result(timeout_s=10) == 42


def test_work_that_raises_answers_with_its_error_each_time_it_is_asked() -> None:
    answer = ClientLoop("test-loop").submit(_fail())

    for _ in range(2):
        with pytest.raises(ValueError, match="no such tool"):
            answer.result(timeout_s=10)


def test_an_answer_not_there_in_time_raises_the_library_s_timed_out_error_and_comes_later() -> None:
    release = threading.Event()

    async def held() -> str:
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 10)
        return "late"

    answer = ClientLoop("test-loop").submit(held())
    with pytest.raises(TimedOutError, match=r"no answer within 0\.05 s"):
        answer.result(timeout_s=0.05)
    release.set()

    assert answer.result(timeout_s=10) == "late"


def test_work_cancelled_on_the_loop_answers_with_the_cancel() -> None:
    async def cancelled() -> None:
        raise asyncio.CancelledError

    answer = ClientLoop("test-loop").submit(cancelled())

    with pytest.raises(asyncio.CancelledError):
        answer.result(timeout_s=10)


def test_many_threads_at_once_each_get_their_own_answer_on_one_loop_thread() -> None:
    loop = ClientLoop("test-loop")

    async def where(value: int) -> tuple[int, str]:
        await asyncio.sleep(0.001)
        return value, threading.current_thread().name

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda value: loop.submit(where(value)).result(timeout_s=10), range(200)))

    assert [value for value, _ in answers] == list(range(200))
    assert {name for _, name in answers} == {"test-loop"}


def test_a_closed_loop_is_replaced_by_a_new_one_at_the_next_submit() -> None:
    loop = ClientLoop("test-loop")
    assert loop.submit(_double(1)).result(timeout_s=10) == 2
    first = loop._loop_running()
    first.call_soon_threadsafe(first.stop)
    stopped = time.monotonic() + 10
    while first.is_running() and time.monotonic() < stopped:
        time.sleep(0.01)
    first.close()

    assert loop.submit(_double(2)).result(timeout_s=10) == 4
    assert loop._loop_running() is not first
