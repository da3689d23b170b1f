"""What `agent_env._private.openenv_client` expects of OpenEnv's client, driven against a real server:
an error frame raised as a RuntimeError whose text ends with its code, and a refused handshake whose
text says HTTP 401."""

from __future__ import annotations

import asyncio

import pytest
from openenv import GenericEnvClient

from agent_env._private.openenv_client import ErrorFrame, error_frame, refused_for_token
from agent_env.testing import FakeTask
from tst.support.serving import Serve
from tst.support.waiting import WAIT_S

pytestmark = pytest.mark.needs("openenv_installed")

TASKS = {"train": [FakeTask("crates")]}


async def refusal_of_a_session(url: str, *, another_holds_one: bool = False) -> BaseException:
    """What a client asking for its session's state raises (once another client holds one, if asked)."""
    clients = [GenericEnvClient(base_url=url) for _ in range(2 if another_holds_one else 1)]
    try:
        async with asyncio.timeout(WAIT_S):
            if another_holds_one:
                await clients[0].state()
            with pytest.raises(Exception) as raised:
                await clients[-1].state()
        return raised.value
    finally:
        for client in clients:
            await client.close()


def test_openenv_client_still_raises_server_errors_as_runtime_error_with_code_suffix(serve: Serve) -> None:
    server = serve(TASKS, max_concurrent_envs=1)

    refused = asyncio.run(refusal_of_a_session(server.url, another_holds_one=True))

    assert type(refused) is RuntimeError
    assert error_frame(refused) == ErrorFrame(
        "CAPACITY_REACHED",
        "Server at capacity: 1/1 sessions held (1 by WebSocket clients on /ws, 0 without a client). "
        "Cannot accept new connections.",
    )


def test_openenv_client_still_says_http_401_when_a_server_refuses_its_handshake_for_a_token(
    serve: Serve,
) -> None:
    server = serve(TASKS, token="s3cret")

    refused = asyncio.run(refusal_of_a_session(server.url))

    assert error_frame(refused) is None
    assert refused_for_token(str(refused)), str(refused)
