"""`run_call`: a call within its deadline, interrupted at once once its client is gone, read ahead of
once it runs long; a cancel from outside stays a cancel."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

import pytest

from agent_env._error_types import ErrorCode
from agent_env.openenv._calls import CURRENT_LINK, LONG_S, ClientLink, InterruptedCallError, run_call

pytestmark = pytest.mark.needs("openenv_installed")

_T = TypeVar("_T")

LATE_S = 1.0
"""How late past its due time a call may be interrupted here (a loaded machine); the calls interrupted
sleep 5 s, so anything under this is the deadline's doing."""

STEP_S = 0.01


async def _linked(link: ClientLink, call: Awaitable[_T], timeout_s: float | None) -> _T:
    """`run_call` as a connection's handler runs it: its link in the context."""
    CURRENT_LINK.set(link)
    return await run_call(call, timeout_s)


async def _interrupted(call: Awaitable[object]) -> tuple[ErrorCode, float]:
    started = time.monotonic()
    with pytest.raises(InterruptedCallError) as interrupted:
        await call
    return ErrorCode(interrupted.value.code), time.monotonic() - started


def test_a_call_past_its_deadline_is_interrupted_as_deadline_exceeded() -> None:
    code, waited = asyncio.run(_interrupted(run_call(asyncio.sleep(5), 0.05)))

    assert code is ErrorCode.DEADLINE_EXCEEDED
    assert 0.05 <= waited < 0.05 + LATE_S


def test_a_call_within_its_deadline_returns_and_the_deadline_never_fires_after() -> None:
    async def main() -> str:
        answer = await run_call(asyncio.sleep(0, "answer"), 0.05)
        await asyncio.sleep(0.1)  # past the due time: nothing may cancel this task now
        return answer

    assert asyncio.run(main()) == "answer"


def test_a_client_gone_ends_its_call_at_once_and_twice_is_harmless() -> None:
    async def main() -> tuple[ErrorCode, float]:
        link = ClientLink()
        loop = asyncio.get_running_loop()
        loop.call_later(0.02, link.lost)
        loop.call_later(0.03, link.lost)
        return await _interrupted(_linked(link, asyncio.sleep(5), None))

    code, waited = asyncio.run(main())

    assert code is ErrorCode.CLIENT_GONE
    assert waited < 0.02 + LATE_S


def test_a_call_on_a_server_shutting_down_is_interrupted_as_such() -> None:
    async def main() -> ErrorCode:
        link = ClientLink()
        asyncio.get_running_loop().call_later(0.02, link.lost, ErrorCode.SHUTTING_DOWN)
        code, _ = await _interrupted(_linked(link, asyncio.sleep(5), 30.0))
        return code

    assert asyncio.run(main()) is ErrorCode.SHUTTING_DOWN


def test_no_deadline_never_interrupts_a_call() -> None:
    async def main() -> str:
        return await _linked(ClientLink(), asyncio.sleep(STEP_S * 3, "done"), None)

    assert asyncio.run(main()) == "done"


def test_a_call_is_read_ahead_of_once_if_it_runs_long_and_never_if_it_is_quick() -> None:
    called: list[str] = []

    async def main() -> None:
        await _linked(ClientLink(lambda: called.append("quick")), asyncio.sleep(0), None)
        await _linked(ClientLink(lambda: called.append("long")), asyncio.sleep(LONG_S + STEP_S * 3), None)
        await asyncio.sleep(STEP_S * 3)

    asyncio.run(main())

    assert called == ["long"]


def test_a_cancel_from_outside_stays_a_cancel_and_is_not_taken_for_the_deadline() -> None:
    async def main() -> None:
        task = asyncio.ensure_future(_linked(ClientLink(), asyncio.sleep(5), 5.0))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_many_calls_at_once_each_end_at_their_own_deadline() -> None:
    async def main() -> list[int]:
        ended: list[int] = []

        async def call(index: int, timeout_s: float) -> None:
            try:
                await _linked(ClientLink(), asyncio.sleep(5), timeout_s)
            except InterruptedCallError:
                ended.append(index)

        await asyncio.gather(*(call(i, 0.02 * (i + 1)) for i in range(4)))
        return ended

    assert asyncio.run(main()) == [0, 1, 2, 3]


def test_a_cancel_from_outside_that_comes_with_the_client_gone_is_still_a_cancel() -> None:
    async def main() -> None:
        link = ClientLink()
        task = asyncio.ensure_future(_linked(link, asyncio.sleep(5), None))
        await asyncio.sleep(0.01)
        link.lost()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_a_client_gone_before_the_call_refuses_it_and_after_it_does_nothing() -> None:
    async def main() -> tuple[ErrorCode, str]:
        gone = ClientLink()
        gone.lost()
        refused, _ = await _interrupted(_linked(gone, asyncio.sleep(5), None))
        link = ClientLink()
        answer = await _linked(link, asyncio.sleep(0, "done"), None)
        link.lost()
        await asyncio.sleep(0.01)  # a cancel left behind would land here
        return refused, answer

    assert asyncio.run(main()) == (ErrorCode.CLIENT_GONE, "done")


def test_a_call_that_swallows_the_cancel_returns_what_it_returns() -> None:
    async def swallowing() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "swallowed"
        return "slept"

    async def main() -> str:
        answer = await run_call(swallowing(), 0.01)
        await asyncio.sleep(0.01)  # the task is not left cancelling
        return answer

    assert asyncio.run(main()) == "swallowed"
