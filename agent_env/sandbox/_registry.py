"""The sandbox providers this distribution registers (pyproject.toml's `agent_env.parts` entry points,
`sandbox.local` and `sandbox.docker`), and the provider a server's episodes use."""

from __future__ import annotations

import functools

from agent_env._contracts.registry import sandbox_provider
from agent_env._contracts.sandbox import SandboxProvider
from agent_env._contracts.sandbox_settings import SandboxConfig, SandboxFactory
from agent_env._errors import ArgumentError
from agent_env.sandbox._local import LocalSandboxProvider


def local_provider(settings: SandboxConfig, *, allow_network: bool = False) -> SandboxProvider:
    """The local sandbox's provider (`sandbox.local`): never a network of its own to give."""
    return LocalSandboxProvider(isolation=settings.isolation, max_file_mb=settings.work_mb)


def docker_provider(settings: SandboxConfig, *, allow_network: bool = False) -> SandboxProvider:
    """Docker's provider (`sandbox.docker`), made once per settings: it checks its engine and image
    when made; with `allow_network`, its containers have a network when the settings ask for one."""
    return _docker_provider(settings, allow_network)


def server_provider(
    name: str | SandboxProvider, settings: SandboxConfig | None = None, *, warm: int | None = None
) -> SandboxProvider:
    """The provider a server's episodes use: `sandbox_provider`'s, behind a warm pool of `warm`
    containers (default: the settings' `warm`) when it is Docker's.

    A `warm` given for another provider is an error; the settings' is then left unused, since a
    bundle made for Docker may be served with the local sandbox.
    """
    if warm is not None and (isinstance(warm, bool) or not isinstance(warm, int) or warm < 0):
        raise ArgumentError(f"--warm is a number of containers, 0 or more, got {warm!r}")
    chosen = settings or SandboxConfig()
    provider = sandbox_provider(name, settings)
    size = warm if warm is not None else chosen.warm
    if not size:
        return provider
    from agent_env.sandbox._docker import DockerSandboxProvider

    if not isinstance(provider, DockerSandboxProvider):
        if warm is None:
            return provider
        raise ArgumentError(
            f"a warm pool (--warm {warm}) is for the docker sandbox, and this server's is "
            f"'{provider.name}': add --sandbox docker, or leave --warm out"
        )
    from agent_env.sandbox._pool import WarmPool

    return WarmPool(provider, size)


@functools.cache
def _docker_provider(settings: SandboxConfig, allow_network: bool) -> SandboxProvider:
    from agent_env.sandbox._docker import DockerSandboxProvider

    return DockerSandboxProvider(settings, allow_network=allow_network)


REGISTERED: tuple[SandboxFactory, SandboxFactory] = (local_provider, docker_provider)
"""What this module registers (pyproject.toml), held to the engine's contracts by the type checker."""
