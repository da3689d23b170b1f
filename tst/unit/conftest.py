"""Fixtures the unit tests share: servers on loopback and OpenEnv clients, each closed after its test.

OpenEnv is imported only when a server or a client is made, so tests that use neither never import it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest


@pytest.fixture
def connect() -> Iterator[Callable[..., Any]]:
    """Open a blocking OpenEnv client on a server's URL, as a trainer does (`GenericEnvClient`'s keywords
    pass through).

    OpenEnv is imported only when a client is opened, so tests that never open one never import it.
    """
    clients: list[Any] = []

    def open_client(url: str, **options: Any) -> Any:
        from openenv import GenericEnvClient

        client = GenericEnvClient(base_url=url, **options).sync()
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Any]]:
    """Start a `BackgroundServer` for an ASGI app, or for fake tasks by split (`_app`'s keywords pass
    through); every server is stopped after the test."""
    servers: list[Any] = []

    def start(what: Any, **options: Any) -> Any:
        from agent_env.openenv import BackgroundServer
        from agent_env.openenv.app import _app
        from agent_env.testing import fake_served

        app = _app(fake_served(what), **options) if isinstance(what, Mapping) else what
        server = BackgroundServer(app).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.running:
            server.stop()
