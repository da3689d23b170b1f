"""`score_batch`: a reward function that scores a GRPOTrainer batch's episodes side by side.

GRPOTrainer asks each environment for its reward one rollout after another, so a batch whose
verifiers take seconds (a test suite, a judge) waits for the sum of them. Reward functions run first,
once per batch, and GRPOTrainer hands them the batch's environments (`environments=`): this one ends
every episode's open turns and waits for all their scores at once, on a thread per episode; each
environment's `get_reward` then hands TRL the score it already holds. It returns None for every
rollout, so the score is counted once, in the environment's own reward column (its `rewards/<...>`
column logs NaN, by design). AsyncGRPO scores rollouts side by side on its own and gives reward
functions no `environments=`: there it returns None and does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent_env.training.trl.classes import ToolsetEnvironment

MAX_SCORED_AT_ONCE = 256
"""Episodes whose scores are waited for at once; each waits on its server, not on this process."""


def score_batch(
    completions: Sequence[Any], environments: Sequence[object] | None = None, **_: Any
) -> list[float | None]:
    """Score the batch's episodes at once; None for each rollout (their scores are `get_reward`'s)."""
    ours = [environment for environment in environments or () if isinstance(environment, ToolsetEnvironment)]
    if ours:
        with ThreadPoolExecutor(min(len(ours), MAX_SCORED_AT_ONCE), thread_name_prefix="score_batch") as pool:
            list(pool.map(_score, ours))
    return [None] * len(completions)


def _score(environment: ToolsetEnvironment) -> None:
    """Score one episode; what fails is left for its `get_reward`, which meets it again and says so."""
    try:
        environment._score()
    except Exception:
        return
