"""The sandbox containers in the engine: what the tier's conftest and its tests count and clear."""

from __future__ import annotations

from typing import Any

from agent_env.sandbox._docker_engine import SANDBOX_LABEL


def sandbox_containers(client: Any) -> list[str]:
    """The ids of every container a sandbox provider made, running or not.

    The low-level list answers in one call; the high-level one inspects each container after listing
    them, and fails on one removed in between.
    """
    return [str(c["Id"]) for c in client.api.containers(all=True, filters={"label": SANDBOX_LABEL})]
