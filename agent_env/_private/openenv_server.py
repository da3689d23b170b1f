"""OpenEnv 0.10's `HTTPEnvServer`, with a hook where it creates a session: its private `_create_session`.

OpenEnv makes every session, the `/ws` handler's included, in `HTTPEnvServer._create_session()`, an
async method of no arguments that answers (session id, environment) and raises
`SessionCapacityError` at capacity. It offers no public hook there, and the server needs one: it
marks the connection whose handler asks (`agent_env.openenv._sessions`). `HookedEnvServer` overrides
that method alone, here, and hands each creation to `create_session_with`. This fence belongs to
the server's layer: it imports OpenEnv's server, and only agent_env.openenv imports it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent_env._private.openenv_core import Environment, HTTPEnvServer

CreateSession = Callable[[], Awaitable[tuple[str, Environment]]]
"""OpenEnv's own way of making a session: reserve a slot, make the environment, answer both."""


class HookedEnvServer(HTTPEnvServer):
    """OpenEnv's server, whose every session is made through `create_session_with`."""

    async def _create_session(self) -> tuple[str, Environment]:
        return await self.create_session_with(super()._create_session)

    async def create_session_with(self, create: CreateSession) -> tuple[str, Environment]:
        """Make a session with `create`; a subclass wraps it to act around each session made."""
        return await create()
