"""What can go wrong on the trainer's side, each error saying how to fix it."""

from __future__ import annotations

from agent_env._errors import AgentEnvError
from agent_env.client._errors import (
    CurriculumError,
    ServerAtCapacityError,
    ServerUnavailableError,
    UnknownSplitError,
)
from agent_env.client._signatures import UnsupportedToolError

__all__ = [
    "CurriculumError",
    "DemonstrationError",
    "DemonstrationWarning",
    "EvalResultsError",
    "FleetMismatchError",
    "GroupAcrossServersWarning",
    "ServerAtCapacityError",
    "ServerUnavailableError",
    "ToolCallError",
    "UnknownSplitError",
    "UnsupportedToolError",
]


class FleetMismatchError(AgentEnvError, ValueError):
    """The servers given as one fleet do not all serve the same tasks and bundle content, or a single
    server no longer serves what the run started with (restarted with another copy of the bundle)."""


class ToolCallError(AgentEnvError, RuntimeError):
    """A call the episode could not carry out; TRL shows its message to the model as the tool's error."""


class DemonstrationError(AgentEnvError, RuntimeError):
    """A split's demonstrations cannot be made as asked: it has no reference plays, or (with
    `strict=True`) some no longer score what they should; or, from recorded trajectories, some are of
    tasks the server does not serve, or none is a success. `failures` names each such play."""

    def __init__(self, message: str, failures: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.failures = failures


class DemonstrationWarning(UserWarning):
    """Plays left out of the demonstrations: reference plays (a bundle's solutions/SPLIT.jsonl, a
    Harbor task's solution/solve.sh) that no longer score what they should, or recorded trajectories
    of tasks the server does not serve (`foreign="skip"`)."""


class EvalResultsError(AgentEnvError, ValueError):
    """Eval results that cannot choose the tasks asked for: they measured another bundle's tasks (its
    tasks fingerprint differs) or another split, were written before a measure asked was recorded, or
    some of the split's tasks have no measure in them."""


class GroupAcrossServersWarning(UserWarning):
    """A GRPO group's rollouts are on several servers of a fleet, so its relative judge scores each
    alone (`score_batch`): a judge reads a group on one server only."""
