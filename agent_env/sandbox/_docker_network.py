"""A Docker sandbox's network in each phase of its episode: the agent's turns, then its verifiers'.

A container joins a network only for a phase whose task asks for one and whose server allows it
(`--allow-internet`); otherwise it has none (`network_mode="none"`: its loopback alone). A task may
ask differently per phase (Harbor's `[agent]` / `[verifier] network_mode`): the container is created
as the agent's phase asks, and switched through the engine once the sandbox is sealed for its
verifiers, before their first command, so that no process of the agent's is left to use the other
phase's network. A warm pool's containers, created ahead, are in the agent's phase until then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_env._error_types import SandboxUnavailableError

DEFAULT_NETWORK = "bridge"
"""The engine's default network: what a phase given the internet joins."""
NO_NETWORK = "none"


@dataclass(frozen=True)
class NetworkPhases:
    """The network each phase's container is on (None: no network, its loopback alone)."""

    agent: str | None = None
    verifiers: str | None = None

    @classmethod
    def of(cls, agent: bool, verifiers: bool, network: str = DEFAULT_NETWORK) -> NetworkPhases:
        """The phases as asked for (`agent`, `verifiers`) and allowed, joining `network` when they do."""
        return cls(network if agent else None, network if verifiers else None)

    @property
    def network_mode(self) -> str:
        """What the container is created with: the agent's phase's network, or none."""
        return self.agent or NO_NETWORK

    @property
    def switches(self) -> bool:
        return self.agent != self.verifiers

    def to_verifiers(self, container: Any) -> None:
        """Move `container` from the agent's phase's network to the verifiers' (blocking: the engine's
        API). Leaving the first before joining the second: a container in `none` may join no other."""
        import docker.errors

        api = container.client.api
        try:
            api.disconnect_container_from_network(container.id, self.network_mode)
            if self.verifiers is not None:
                api.connect_container_to_network(container.id, self.verifiers)
        except docker.errors.NotFound as exc:
            raise missing(self.verifiers or self.network_mode, exc) from exc


def missing(network: str, exc: BaseException) -> SandboxUnavailableError:
    """The error of a network the engine does not have (or a container gone meanwhile)."""
    return SandboxUnavailableError(
        f"the Docker engine could not put a sandbox on its network '{network}' ({exc}): a task given the "
        "internet (--allow-internet) joins it, so start the engine with that network (its default "
        "bridge: not `dockerd --bridge=none`), or serve without --allow-internet"
    )
