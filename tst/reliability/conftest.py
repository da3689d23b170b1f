"""The reliability tier: hostile input, faults and load against a real server on loopback, each bounded.

Every test here needs OpenEnv; each leaves nothing behind on the server it started.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tst/reliability/" in item.nodeid:
            item.add_marker(pytest.mark.needs("openenv_installed"))
