"""Test-wide settings and fixtures: capabilities decide skips at collection (a module's before it is
imported, so the extras' tests skip on an install of the core alone), nothing reaches the network,
and servers on loopback with OpenEnv clients (imported only when a test makes one) are closed after it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tst.util import capabilities

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_name, "1")
os.environ.pop("AGENTENV_TOKEN", None)  # a token in the developer's shell would guard every test server


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module:
    return capabilities.NeedingModule.from_parent(parent, path=module_path)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    return capabilities.located(report, collector)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        capabilities.apply(item)


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
    """Start a `BackgroundServer` for an ASGI app, or for fake tasks by split (`build_served_app`'s
    keywords pass through); every server is stopped after the test."""
    servers: list[Any] = []

    def start(what: Any, **options: Any) -> Any:
        from agent_env.openenv import BackgroundServer, build_served_app
        from agent_env.testing import fake_served

        app = build_served_app(fake_served(what), **options) if isinstance(what, Mapping) else what
        server = BackgroundServer(app).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.running:
            server.stop()
