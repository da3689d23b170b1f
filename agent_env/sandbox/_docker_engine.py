"""The Docker engine as every docker module meets it: its client, and the label that marks our containers.

A leaf below the sandbox (_docker.py), the image builder (_docker_image.py), the owner's labels
(_owner.py) and the removals (_docker_removal.py), so those read one way. The Docker SDK is imported only
when a client is made.
"""

from __future__ import annotations

import os
from typing import Any

from agent_env._error_types import SandboxUnavailableError
from agent_env._extras import install_line

INSTALL_HINT = install_line("docker")
SANDBOX_LABEL = "agent-env.sandbox"
"""Every sandbox container and image carries it (the owner's labels hang under it)."""
ENGINE_TIMEOUT_S = 120
"""How long one call to the engine may take: a busy engine creating dozens of containers is slow."""


def docker_client() -> Any:
    """A client of the engine `DOCKER_HOST` names (the local socket by default), checked with a ping."""
    try:
        import docker
    except ImportError as exc:
        raise SandboxUnavailableError(f"the docker sandbox needs the Docker SDK: {INSTALL_HINT}") from exc
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=ENGINE_TIMEOUT_S)
        client.ping()
    except Exception as exc:
        raise SandboxUnavailableError(
            f"the docker sandbox needs a Docker engine, and none answered at {where} ({exc}). Start one "
            "(see the README's 'Docker sandboxes'), set DOCKER_HOST, or choose the local sandbox "
            "(--sandbox local)"
        ) from exc
    return client
