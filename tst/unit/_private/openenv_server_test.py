"""What `agent_env._private.openenv_server` expects of OpenEnv's `HTTPEnvServer`: every session, the
`/ws` handler's included, made by `_create_session`, and no method of the hook's name."""

from __future__ import annotations

import inspect

import pytest
from openenv.core.env_server import HTTPEnvServer

from agent_env._private.openenv_server import HookedEnvServer
from agent_env.testing import FakeTask
from tst.support.serving import Connect, Serve
from tst.unit.openenv._sessions import held

pytestmark = pytest.mark.needs("openenv_installed")


def test_openenv_http_env_server_still_creates_sessions_in_create_session(
    serve: Serve, connect: Connect
) -> None:
    server = serve({"train": [FakeTask("crates")]})

    connect(server.url).state()

    assert inspect.iscoroutinefunction(HTTPEnvServer._create_session)
    assert list(inspect.signature(HTTPEnvServer._create_session).parameters) == ["self"]
    assert held(server, websocket=1), "the /ws session was not made through the hook, which marks its client"


def test_openenv_http_env_server_still_has_no_method_of_the_hook_s_name() -> None:
    ours = {name for name in vars(HookedEnvServer) if not name.startswith("__")} - {"_create_session"}

    assert ours == {"create_session_with"}
    assert sorted(ours & set(dir(HTTPEnvServer))) == []
