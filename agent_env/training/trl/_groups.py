"""GRPO's groups with signal: the share of a step's groups whose rewards differ, so that GRPO's
advantages are not all zero and the group teaches the model something.

TRL logs `frac_reward_zero_std`, which is not quite its complement: a group whose rewards are all
None but one (or all None, an episode that could not be scored) has a NaN spread there, which TRL
counts as not zero, though its advantages are all zero; and with `scale_rewards="batch"` it is the
batch's spread, one value for every group. `GroupsWithSignal` counts a group as having signal when its
rewards, None left out, are not all equal (within TRL's 1e-8), and adds `groups_with_signal` to each
log that carries the rewards (`eval_groups_with_signal` to an evaluation's).

The rewards are the ones AgentEnv's environments hand TRL (`get_reward`), in the order TRL asks for
them: a batch's rollouts, each group's `num_generations` in a row. So it counts GRPOTrainer's groups
in this process (AsyncGRPO scores in a process of its own). transformers is imported when the first
callback is made, never at import.
"""

from __future__ import annotations

import threading
import weakref
from functools import cache
from typing import Any

SAME_REWARD = 1e-8
"""Rewards closer than this are equal (TRL's `torch.isclose` on a group's spread, near 0)."""

_LISTENING: weakref.WeakSet[GroupsWithSignal] = weakref.WeakSet()
_LISTENING_LOCK = threading.Lock()


def handed(reward: float | None) -> None:
    """A reward an environment handed TRL: every live callback counts it."""
    with _LISTENING_LOCK:
        listening = list(_LISTENING)
    for callback in listening:
        callback._add(reward)


def share_with_signal(rewards: list[float | None], group_size: int) -> float | None:
    """The share of the groups (each `group_size` rewards in a row) whose rewards, None aside, differ;
    None when there is no whole group."""
    groups = [rewards[start : start + group_size] for start in range(0, len(rewards), group_size)]
    whole = [group for group in groups if len(group) == group_size]
    if not whole:
        return None
    return sum(1 for group in whole if _spread(group)) / len(whole)


def _spread(group: list[float | None]) -> bool:
    scored = [reward for reward in group if reward is not None and reward == reward]  # NaN aside
    return len(scored) > 1 and max(scored) - min(scored) > SAME_REWARD


class GroupsWithSignal:
    """A `transformers.TrainerCallback` for GRPOTrainer over AgentEnv: `callbacks=[GroupsWithSignal()]`
    logs `groups_with_signal` beside `reward` at each logging step (over the groups of the steps
    since the last log), in `trainer.state.log_history` and for the callbacks after it. Pass it
    before callbacks that read it; reporters (`report_to`) run before any callback passed."""

    def __new__(cls) -> GroupsWithSignal:
        made: GroupsWithSignal = super().__new__(_callback_class() if cls is GroupsWithSignal else cls)
        return made

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rewards: list[float | None] = []
        with _LISTENING_LOCK:
            _LISTENING.add(self)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any
    ) -> None:
        if logs is None:
            return
        if "reward" in logs:
            key, group_size = "groups_with_signal", args.num_generations
        elif "eval_reward" in logs:
            key = "eval_groups_with_signal"
            group_size = getattr(args, "num_generations_eval", None) or args.num_generations
        else:
            return
        with self._lock:
            rewards, self._rewards = self._rewards, []
        share = share_with_signal(rewards, group_size)
        if share is None:
            return
        logs[key] = share
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1][key] = share

    def _add(self, reward: float | None) -> None:
        with self._lock:
            self._rewards.append(reward)


@cache
def _callback_class() -> type[GroupsWithSignal]:
    """GroupsWithSignal as a TrainerCallback too: made on first use, so importing this imports no
    transformers."""
    from transformers import TrainerCallback

    return type("GroupsWithSignal", (GroupsWithSignal, TrainerCallback), {"__module__": __name__})
