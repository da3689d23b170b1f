"""`BackgroundServer`: a server in a thread of this process, as tests and `AgentEnv.local` run one."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agent_env._error_types import AgentEnvError, TimedOutError
from agent_env.testing import FakeTask, fake_served
from tst.support.waiting import until

pytestmark = pytest.mark.needs("openenv_installed")


def test_a_server_not_started_in_time_is_stopped_and_raises_a_timed_out_error_callers_catch_as_timeout():
    from agent_env.openenv import BackgroundServer, build_served_app

    served = build_served_app(fake_served({"train": [FakeTask("store")]}))
    starting = threading.Event()

    async def slow_to_start(scope: Any, receive: Any, send: Any) -> None:
        """The served app, its start-up held until the test lets it go on."""
        if scope["type"] == "lifespan":
            await asyncio.to_thread(starting.wait, 30)
        await served(scope, receive, send)

    server = BackgroundServer(slow_to_start)
    letting_go = threading.Timer(1.0, starting.set)  # after start has given up, so stop can end
    letting_go.start()

    with pytest.raises(TimedOutError) as caught:
        server.start(timeout_s=0.2)

    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, AgentEnvError)
    assert str(caught.value) == f"the server on {server.url} did not start within 0.2 s"
    assert until(lambda: not server.running)
