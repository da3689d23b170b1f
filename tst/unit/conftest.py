"""Fixtures the unit tests share: blocking OpenEnv clients, each closed after its test."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
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
