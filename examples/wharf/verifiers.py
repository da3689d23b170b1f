"""The wharf's own verifiers."""

from __future__ import annotations

from collections import Counter

from agent_env import VerifierContext


def bays_at_most(context: VerifierContext, limit: int) -> bool:
    """Every bay holds at most `limit` crates, and no crate was lost."""
    crates = context.envs["dock"].items()
    per_bay = Counter(crate["bay"] for crate in crates)
    expected = len(context.task.seed.get("dock", {}).get("crates", []))
    return len(crates) == expected and max(per_bay.values(), default=0) <= limit
