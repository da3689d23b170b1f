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
    on every run. Memory torch hands out uninitialised is left so, not filled with NaN as deterministic
    mode does by default: TRL's chunked log-probabilities take a fresh buffer at every step and
    overwrite it whole, and filling it took half of each SFT step of a tiny model (what was filled
    and then read would have made the scores NaN, so the scores are the same either way)."""
    import torch

    threads = torch.get_num_threads()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(False)
        torch.utils.deterministic.fill_uninitialized_memory = fill
        torch.set_num_threads(threads)
