"""The integration tier: every test here needs a Docker engine."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tst/integration/" in item.nodeid:
            item.add_marker(pytest.mark.needs("docker_engine"))
