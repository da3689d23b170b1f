"""The trl tier: every test here needs trl and torch (CPU)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tst/trl/" in item.nodeid:
            item.add_marker(pytest.mark.needs("trl_installed"))
