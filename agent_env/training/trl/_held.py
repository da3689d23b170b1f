"""What an AgentEnv must release, even when the process exits after the AgentEnv itself is gone (a
trainer's script keeps the factory, not the AgentEnv): its classes' sessions, its Task API client, and
the server `AgentEnv.local` or `AgentEnv.serving` started."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_env.client._taskapi import TaskAPI
from agent_env.training.trl._classes import close_instances

if TYPE_CHECKING:
    from agent_env.openenv import BackgroundServer


@dataclass
class Held:
    """An AgentEnv's key (its classes' instances are tracked by it), Task API client and server."""

    key: str
    api: TaskAPI
    server: BackgroundServer | None = None
    closed: bool = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        close_instances(self.key)
        self.api.close()
        if self.server is not None:
            self.server.stop()
