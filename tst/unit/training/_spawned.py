"""What AsyncGRPO's spawned rollout process does with the factory it unpickles: play a rollout."""

from __future__ import annotations

from multiprocessing.queues import Queue
from typing import Any


def play_one_rollout(factory: Any, row: dict[str, Any], answers: Queue[Any]) -> None:
    """Build an environment from the factory, play the row's task (store a crate), report its reward."""
    try:
        environment = factory()
        environment.reset(**row)
        result = environment.add_crate(crate="C1", bay=2)
        answers.put(("played", type(environment).__name__, result, environment.get_reward()))
    except BaseException as exc:
        answers.put(("failed", type(exc).__name__, str(exc), None))
