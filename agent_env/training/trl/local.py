"""A server in this process, on a free loopback port, for an AgentEnv to use: what `AgentEnv.local` and
`AgentEnv.serving` start, stopped with the AgentEnv (`held.py`). The server's package is imported only
here, when one is started: the trainer's side never loads it otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from agent_env.openenv import BackgroundServer

T = TypeVar("T")


def serve_in_process(app: Any, use: Callable[[str], T]) -> tuple[T, BackgroundServer]:
    """Serve `app` (an agent_env server's ASGI app) in this process and `use` its URL; the server is
    stopped again if `use` fails."""
    from agent_env.openenv import BackgroundServer

    server = BackgroundServer(app).start()
    try:
        made = use(server.url)
    except BaseException:
        server.stop()
        raise
    return made, server
