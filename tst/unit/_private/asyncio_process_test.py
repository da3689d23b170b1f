"""What `agent_env._private.asyncio_process` expects of asyncio: a process's transport, which lets go of
its pipes when closed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator

from agent_env._private.asyncio_process import let_go_of_pipes

WAIT_S = 5.0


@contextlib.asynccontextmanager
async def a_command_whose_leftover_holds_its_pipe() -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """A command, and the pid of a process it left behind holding its output pipe; both killed after."""
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", "sleep 30 & echo $!", stdout=asyncio.subprocess.PIPE, start_new_session=True
    )
    try:
        assert process.stdout is not None
        yield process, int(await process.stdout.readline())
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        async with asyncio.timeout(WAIT_S):
            await process.wait()


def test_asyncio_subprocess_still_exposes_its_transport() -> None:
    async def has_one() -> bool:
        async with a_command_whose_leftover_holds_its_pipe() as (process, _):
            return isinstance(process._transport, asyncio.SubprocessTransport)

    assert asyncio.run(has_one())


def test_closing_an_asyncio_subprocess_s_transport_still_lets_go_of_a_pipe_its_leftover_holds() -> None:
    async def rest_of_output() -> bytes:
        async with a_command_whose_leftover_holds_its_pipe() as (process, leftover):
            assert process.stdout is not None
            let_go_of_pipes(process)
            async with asyncio.timeout(WAIT_S):
                rest = await process.stdout.read()
                await process.wait()
            os.kill(leftover, 0)  # it still runs, holding its end of the pipe
            return rest

    assert asyncio.run(rest_of_output()) == b""
