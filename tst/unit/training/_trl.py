"""What the trainer-side tests share besides their fixtures: the `open_env` fixture's type, the tools
TRL finds on an environment, and the dock task they play."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from agent_env._contexts import VerifierContext
from agent_env.testing import FakeTask, calls
from agent_env.training.trl import AgentEnv
from tst.support.tools import add_crate, jam_crane, list_crates

Open = Callable[..., AgentEnv]
"""The type of the `open_env` fixture: a URL and AgentEnv's options to an AgentEnv."""


def stored_a_crate(context: VerifierContext) -> float:
    return 1.0 if any(name == "add_crate" for name, _ in calls(context)) else 0.0


def dock_task(task_id: str = "store", **options: Any) -> FakeTask:
    """A fake task with the dock's tools, scored 1 once a crate is stored; `options` are FakeTask's."""
    fields: dict[str, Any] = {
        "tools": [add_crate, list_crates, jam_crane],
        "envs": ("dock",),
        "score": stored_a_crate,
        "system_prompt": "You work on the dock.",
        "turns": ("Store crate C1 in bay 2.",),
    }
    return FakeTask(task_id, **{**fields, **options})


def trl_tools(environment: object) -> dict[str, Callable[..., Any]]:
    """The tools TRL 1.16 offers for an environment instance, found as its trainers find them."""
    return {
        name: getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
