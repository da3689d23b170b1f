"""`Deadline`: `asyncio.timeout`'s behaviour, kept by one watchdog per loop instead of a timer per call."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent_env._deadlines import LONG_S, TICK_S, Deadline

LATE_S = 1.0
"""How late past its due time a deadline may end a call here: `TICK_S` by design, far more on a loaded
machine; the calls interrupted sleep 5 s, so anything under this is the deadline's doing."""


async def _slept_until_interrupted(deadline: Deadline, sleep_s: float = 5.0) -> float:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        async with deadline:
            await asyncio.sleep(sleep_s)
    return time.monotonic() - started


def test_a_call_past_its_deadline_raises_timeout_error_as_asyncio_timeout_does() -> None:
    deadline = Deadline(0.05)

    waited = asyncio.run(_slept_until_interrupted(deadline))

    assert 0.05 <= waited < 0.05 + LATE_S
    assert deadline.expired()


def test_a_call_within_its_deadline_returns_and_the_deadline_never_fires_after() -> None:
    async def main() -> tuple[int, bool]:
        deadline = Deadline(0.05)
        async with deadline:
            answer = 42
        await asyncio.sleep(0.1)  # past the due time: nothing may cancel this task now
        return answer, deadline.expired()

    assert asyncio.run(main()) == (42, False)


def test_expire_ends_the_call_at_once_and_twice_is_harmless() -> None:
    async def main() -> float:
        deadline = Deadline(None)
        loop = asyncio.get_running_loop()
        loop.call_later(0.02, deadline.expire)
        loop.call_later(0.03, deadline.expire)
        return await _slept_until_interrupted(deadline)

    assert asyncio.run(main()) < 0.02 + LATE_S


def test_no_deadline_never_interrupts_a_call() -> None:
    async def main() -> str:
        async with Deadline(None):
            await asyncio.sleep(TICK_S * 3)
        return "done"

    assert asyncio.run(main()) == "done"


def test_on_long_is_called_once_for_a_long_call_and_never_for_a_quick_one() -> None:
    called: list[str] = []

    async def main() -> None:
        async with Deadline(None, on_long=lambda: called.append("quick")):
            await asyncio.sleep(0)
        async with Deadline(None, on_long=lambda: called.append("long")):
            await asyncio.sleep(LONG_S + TICK_S * 3)
        await asyncio.sleep(TICK_S * 3)

    asyncio.run(main())

    assert called == ["long"]


def test_a_cancel_from_outside_stays_a_cancel_and_is_not_taken_for_the_deadline() -> None:
    async def main() -> bool:
        deadline = Deadline(5.0)

        async def call() -> None:
            async with deadline:
                await asyncio.sleep(5)

        task = asyncio.ensure_future(call())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return deadline.expired()

    assert asyncio.run(main()) is False


def test_many_calls_at_once_each_end_at_their_own_deadline() -> None:
    async def main() -> list[int]:
        ended: list[int] = []

        async def call(index: int, timeout_s: float) -> None:
            try:
                async with Deadline(timeout_s):
                    await asyncio.sleep(5)
            except TimeoutError:
                ended.append(index)

        await asyncio.gather(*(call(i, 0.02 * (i + 1)) for i in range(4)))
        return ended

    assert asyncio.run(main()) == [0, 1, 2, 3]


def test_a_cancel_from_outside_that_comes_with_the_deadline_is_still_a_cancel() -> None:
    async def main() -> bool:
        deadline = Deadline(None)

        async def call() -> None:
            async with deadline:
                await asyncio.sleep(5)

        task = asyncio.ensure_future(call())
        await asyncio.sleep(0.01)
        deadline.expire()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return deadline.expired()

    assert asyncio.run(main()) is True


def test_expire_before_or_after_the_call_does_nothing() -> None:
    async def main() -> tuple[str, bool]:
        deadline = Deadline(None)
        deadline.expire()
        async with deadline:
            await asyncio.sleep(0)
        deadline.expire()
        await asyncio.sleep(0.01)  # a cancel left behind would land here
        return "done", deadline.expired()

    assert asyncio.run(main()) == ("done", False)


def test_a_call_that_swallows_the_cancel_returns_what_it_returns() -> None:
    async def main() -> tuple[str, bool]:
        deadline = Deadline(0.01)
        async with deadline:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                answer = "swallowed"
        await asyncio.sleep(0.01)  # the task is not left cancelling
        return answer, deadline.expired()

    assert asyncio.run(main()) == ("swallowed", True)
