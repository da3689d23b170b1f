"""The trl tier: every test here needs trl and torch (CPU)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tst/trl/" in item.nodeid:
            item.add_marker(pytest.mark.needs("trl_installed"))


@pytest.fixture
def deterministic() -> Iterator[None]:
    """Torch's deterministic algorithms on one thread, for a training run that gives the same scores
    on every run."""
    import torch

    threads = torch.get_num_threads()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(False)
        torch.set_num_threads(threads)
