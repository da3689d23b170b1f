"""Sandboxes for tasks that bring their own settings (Harbor tasks: an image each, with its limits):
one Docker provider per distinct settings, each behind a warm pool of its own when asked.

A server starts them all with itself and closes them all after its last teardown. A task that asks
for the internet, for its agent's turns, its verifiers' commands or both, gets it only when the
server was started allowing it (`allow_network`), on `network` (the engine's default bridge); the
start says which tasks ask and what they get.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping

from agent_env._contracts.sandbox import RunsWithServer, Sandbox, SandboxProvider
from agent_env._contracts.sandbox_settings import SandboxConfig
from agent_env.sandbox._docker import DockerSandboxProvider
from agent_env.sandbox._docker_engine import docker_client
from agent_env.sandbox._docker_network import DEFAULT_NETWORK
from agent_env.sandbox._pool import PoolStatus, WarmPool

log = logging.getLogger("agent_env.sandbox")


class SandboxesByTask:
    """A provider per task's settings: `provider_for(settings)` is the one a task's episodes use.

    `warm` containers are kept started for each (so a dataset of N images keeps N x `warm`).
    """

    name = "docker"

    def __init__(
        self,
        settings: Iterable[SandboxConfig],
        *,
        warm: int = 0,
        allow_network: bool = False,
        network: str = DEFAULT_NETWORK,
    ) -> None:
        client = docker_client()
        self.allow_network = allow_network
        self._providers: dict[SandboxConfig, SandboxProvider] = {}
        for chosen in settings:
            if chosen in self._providers:
                continue
            provider = DockerSandboxProvider(
                chosen, client=client, allow_network=allow_network, network=network
            )
            self._providers[chosen] = WarmPool(provider, warm) if warm else provider
        self.asking = sorted({s.image for s in self._providers if s.asks_network})
        """The images whose tasks ask for the internet, in any phase."""

    def provider_for(self, settings: SandboxConfig) -> SandboxProvider:
        return self._providers[settings]

    @property
    def pools(self) -> Mapping[str, WarmPool]:
        """Each image's warm pool, when there are pools."""
        return {s.image: p for s, p in self._providers.items() if isinstance(p, WarmPool)}

    async def create(self, files: Mapping[str, bytes]) -> Sandbox:
        """A sandbox of the only settings there are; with several, each task's `provider_for` decides."""
        if len(self._providers) != 1:
            from agent_env._errors import StateError

            raise StateError(
                "these tasks each have their own sandbox: make a task's with provider_for(settings)"
            )
        return await next(iter(self._providers.values())).create(files)

    def status(self) -> PoolStatus | None:
        """The warm pools' counts, summed over the images."""
        pools = [pool.status() for pool in self.pools.values()]
        if not pools:
            return None
        fields = PoolStatus.model_fields
        return PoolStatus(**{name: sum(getattr(status, name) for status in pools) for name in fields})

    async def start(self) -> None:
        if self.asking:
            what = (
                "gets it"
                if self.allow_network
                else "runs without it (serve with --allow-internet to give it)"
            )
            log.warning(
                '%d image(s) of these tasks ask for the internet (Harbor\'s network_mode "public", for '
                "the agent's turns, test.sh or both): each %s: %s",
                len(self.asking),
                what,
                ", ".join(self.asking),
            )
        await asyncio.gather(*(p.start() for p in self._providers.values() if isinstance(p, RunsWithServer)))

    async def close(self) -> None:
        await asyncio.gather(*(p.close() for p in self._providers.values() if isinstance(p, RunsWithServer)))
