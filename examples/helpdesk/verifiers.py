"""The helpdesk's own verifier: whether the agent looked the right customer up with the right tool."""

from __future__ import annotations

from agent_env import VerifierContext


def looked_up(context: VerifierContext, tool: str, name: str) -> bool:
    """`tool` was called with `name`, the customer the task is about."""
    lookups: list[dict[str, str]] = getattr(context.envs["desk"], "lookups", [])
    return {"tool": tool, "name": name} in lookups
