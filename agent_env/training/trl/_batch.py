"""`score_batch`: a reward function that scores a GRPOTrainer batch's episodes side by side, and
names each GRPO group to a relative judge.

GRPOTrainer asks each environment for its reward one rollout after another, so a batch whose
verifiers take seconds (a test suite, a judge) waits for the sum of them. Reward functions run first,
once per batch, and GRPOTrainer hands them the batch's environments (`environments=`): this one ends
every episode's open turns and waits for all their scores at once, on a thread per episode; each
environment's `get_reward` then hands TRL the score it already holds. It returns None for every
rollout, so the score is counted once, in the environment's own reward column (its `rewards/<...>`
column logs NaN, by design). AsyncGRPO scores rollouts side by side on its own and gives reward
functions no `environments=`: there it returns None and does nothing.

A GRPO group is the batch's consecutive rollouts of one task (GRPOTrainer's sampler repeats each
prompt `num_generations` times in a row). For a task with a relative judge (`judged_in_groups`), the
group's episodes end their last turn naming the group (a fresh key and its size), and the server's
judge reads them together (`agent_env.judges._groups`). A group whose rollouts are on several servers
of a fleet cannot be read together by one: each of them is judged alone, and a warning says so once.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from typing import Any

from agent_env._specs import MAX_GROUP_SIZE
from agent_env.training.trl._classes import ToolsetEnvironment
from agent_env.training.trl._errors import GroupAcrossServersWarning

MAX_SCORED_AT_ONCE = 256
"""Episodes whose scores are waited for at once; each waits on its server, not on this process."""

Group = tuple[str, int]
"""A GRPO group as an episode's last end_turn names it: a key and its size."""


_warned_across = False


def score_batch(
    completions: Sequence[Any], environments: Sequence[object] | None = None, **_: Any
) -> list[float | None]:
    """Score the batch's episodes at once; None for each rollout (their scores are `get_reward`'s)."""
    ours = [environment for environment in environments or () if isinstance(environment, ToolsetEnvironment)]
    if ours:
        with ThreadPoolExecutor(min(len(ours), MAX_SCORED_AT_ONCE), thread_name_prefix="score_batch") as pool:
            groups = groups_of(list(pool.map(_grouping, ours)))
            list(pool.map(_score, ours, groups))
    return [None] * len(completions)


def groups_of(places: Sequence[tuple[str, str, int] | None]) -> list[Group | None]:
    """Each rollout's GRPO group, from where each waits to be judged (server, split, index; None: it
    does not): consecutive rollouts of one task on one server form a group of two or more."""
    global _warned_across
    named: list[Group | None] = [None] * len(places)
    for task, run in groupby(enumerate(places), key=lambda item: None if item[1] is None else item[1][1:]):
        members = [(i, place) for i, place in run if place is not None]
        if task is None:
            continue
        servers = {server for _, (server, _, _) in members}
        if len(servers) > 1:
            if not _warned_across:
                _warned_across = True
                warnings.warn(
                    f"a GRPO group of task {task[0]}/{task[1]} has rollouts on {len(servers)} servers, so "
                    "its relative judge scores each alone: a judge reads a group on one server only",
                    GroupAcrossServersWarning,
                    stacklevel=3,
                )
            continue
        for start in range(0, len(members), MAX_GROUP_SIZE):
            cut = members[start : start + MAX_GROUP_SIZE]
            if len(cut) > 1:
                key = uuid.uuid4().hex
                for i, _ in cut:
                    named[i] = (key, len(cut))
    return named


def _grouping(environment: ToolsetEnvironment) -> tuple[str, str, int] | None:
    try:
        return environment._grouping()
    except Exception:
        return None  # its reward meets what failed again and says so


def _score(environment: ToolsetEnvironment, group: Group | None) -> None:
    """Score one episode; what fails is left for its `get_reward`, which meets it again and says so."""
    try:
        environment._score(group)
    except Exception:
        return
