"""The OpenEnv 0.10 names agent_env uses, from `openenv.core` loaded without its Gradio web interface.

Any part of `openenv.core` imports OpenEnv's server package, whose `__init__` imports its web
interface, and with it gradio, whenever gradio is installed (always: `openenv` requires it). That is
most of the time a process using OpenEnv takes to start (a trainer, `agent-env serve`, `agent-env
eval`): about 5 s of 7 on a slow 2-core machine. agent_env never serves that interface (it builds its
own app, not OpenEnv's `create_app`), and OpenEnv runs without it: it catches the `ModuleNotFoundError`
and leaves `create_web_interface_app` None. So gradio is kept out while `openenv.core` loads, and only
then; `create_app` with `ENABLE_WEB_INTERFACE` set still imports it when called. A process that
imported gradio, or `openenv.core`, before agent_env did loads OpenEnv as it is.

Every module of agent_env that uses OpenEnv imports it from here, the server's and the client's alike,
so that whichever loads first loads it this way.
"""

from __future__ import annotations

import importlib
import sys

_WEB_INTERFACE_NEEDS = "gradio"


def _load_without_web_interface() -> None:
    if "openenv.core" in sys.modules or _WEB_INTERFACE_NEEDS in sys.modules:
        return
    sys.modules[_WEB_INTERFACE_NEEDS] = None  # type: ignore[assignment]  # import raises ModuleNotFoundError
    try:
        importlib.import_module("openenv.core")
    finally:
        if _WEB_INTERFACE_NEEDS in sys.modules and sys.modules[_WEB_INTERFACE_NEEDS] is None:
            del sys.modules[_WEB_INTERFACE_NEEDS]


_load_without_web_interface()

from openenv import GenericEnvClient  # noqa: E402
from openenv.core.env_server import HTTPEnvServer  # noqa: E402
from openenv.core.env_server.exceptions import SessionCapacityError  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.types import (  # noqa: E402
    Action,
    EnvironmentMetadata,
    Observation,
    State,
    WSErrorCode,
    WSErrorResponse,
)

__all__ = [
    "Action",
    "Environment",
    "EnvironmentMetadata",
    "GenericEnvClient",
    "HTTPEnvServer",
    "Observation",
    "SessionCapacityError",
    "State",
    "WSErrorCode",
    "WSErrorResponse",
]
