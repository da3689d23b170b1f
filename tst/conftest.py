"""Test-wide settings: capabilities decide skips at collection, and nothing reaches the network."""

from __future__ import annotations

import os

import pytest

from tst.util import capabilities

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_name, "1")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        capabilities.apply(item)
