"""What the trainer-side tests share: AgentEnvs closed after each test."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the trl extra: a core-only install still collects this folder, to skip its tests
    from agent_env.training.trl import AgentEnv
    from tst.unit.training._trl import Open


@pytest.fixture
def open_env() -> Iterator[Open]:
    """Make an AgentEnv on a URL (its keywords pass through); each is closed after the test."""
    from agent_env.training.trl import AgentEnv

    made: list[AgentEnv] = []

    def make(url: str, **options: Any) -> AgentEnv:
        env = AgentEnv(url, **options)
        made.append(env)
        return env

    yield make
    for env in made:
        with contextlib.suppress(Exception):
            env.close()
