"""Servers on loopback for the server's tests, each stopped after its test.

The `connect` fixture, for OpenEnv clients, is in tst/unit/conftest.py; `Connect` is its type here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest
from fastapi import FastAPI
from openenv.core.sync_client import SyncEnvClient

from agent_env.openenv import BackgroundServer
from agent_env.openenv.app import _app
from agent_env.testing import FakeTask, fake_served

Serve = Callable[..., BackgroundServer]
Connect = Callable[..., SyncEnvClient]
"""The type of the `connect` fixture (tst/unit/conftest.py): a URL and client options to a client."""


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start a server for an app, or for fake tasks by split (`_app`'s keywords pass through)."""
    servers: list[BackgroundServer] = []

    def start(what: FastAPI | Mapping[str, Sequence[FakeTask]], **options: Any) -> BackgroundServer:
        app = what if isinstance(what, FastAPI) else _app(fake_served(what), **options)
        server = BackgroundServer(app).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.running:
            server.stop()
