"""`BackgroundServer`: a server in a thread of this process, as tests and `AgentEnv.local` run one."""

from __future__ import annotations

import pytest

from agent_env.errors import AgentEnvError, TimedOutError
from agent_env.testing import FakeTask, fake_served
from tst.support.waiting import until

pytestmark = pytest.mark.needs("openenv_installed")


def test_a_server_not_started_in_time_is_stopped_and_raises_a_timed_out_error_callers_catch_as_timeout():
    from agent_env.openenv import BackgroundServer, build_served_app

    server = BackgroundServer(build_served_app(fake_served({"train": [FakeTask("store")]})))

    with pytest.raises(TimedOutError) as caught:
        server.start(timeout_s=-1.0)  # past its time before it could start

    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, AgentEnvError)
    assert str(caught.value) == f"the server on {server.url} did not start within -1 s"
    assert until(lambda: not server.running)
