"""Servers on loopback and OpenEnv clients for the server's tests, each stopped or closed after its test."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest
from fastapi import FastAPI
from openenv import GenericEnvClient
from openenv.core.sync_client import SyncEnvClient

from agent_env.openenv import BackgroundServer
from agent_env.openenv.app import _app
from agent_env.testing import FakeTask, fake_served

Serve = Callable[..., BackgroundServer]
Connect = Callable[..., SyncEnvClient]


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


@pytest.fixture
def connect() -> Iterator[Connect]:
    """Open a blocking OpenEnv client on a server's URL, as a trainer does."""
    clients: list[SyncEnvClient] = []

    def open_client(url: str, **options: Any) -> SyncEnvClient:
        client = GenericEnvClient(base_url=url, **options).sync()
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()
