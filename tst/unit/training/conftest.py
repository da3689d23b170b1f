"""What the trainer-side tests share: AgentEnvs closed after each test."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_env.training.trl import AgentEnv

Open = Callable[..., AgentEnv]
"""The type of the `open_env` fixture: a URL and AgentEnv's options to an AgentEnv."""


@pytest.fixture
def open_env() -> Iterator[Open]:
    """Make an AgentEnv on a URL (its keywords pass through); each is closed after the test."""
    made: list[AgentEnv] = []

    def make(url: str, **options: Any) -> AgentEnv:
        env = AgentEnv(url, **options)
        made.append(env)
        return env

    yield make
    for env in made:
        with contextlib.suppress(Exception):
            env.close()


def trl_tools(environment: object) -> dict[str, Callable[..., Any]]:
    """The tools TRL 1.16 offers for an environment instance, found as its trainers find them."""
    return {
        name: getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
