"""Sandbox providers by name, as bundles and the CLI select them."""

from __future__ import annotations

import functools

from agent_env._errors import ArgumentError
from agent_env.sandbox._base import SandboxProvider
from agent_env.sandbox._config import SandboxConfig
from agent_env.sandbox._local import LocalSandboxProvider

PROVIDERS = ("local", "docker")


def sandbox_provider(
    name: str | SandboxProvider, settings: SandboxConfig | None = None, *, allow_network: bool = False
) -> SandboxProvider:
    """The provider called `name`, made with `settings` (a provider passes through unchanged).

    A Docker provider checks its engine and image when it is made, and is made once per settings;
    with `allow_network`, its containers have a network when the settings ask for one.
    """
    if not isinstance(name, str):
        return name
    if name == "local":
        chosen = settings or SandboxConfig()
        return LocalSandboxProvider(isolation=chosen.isolation, max_file_mb=chosen.work_mb)
    if name == "docker":
        return _docker_provider(settings or SandboxConfig(provider="docker"), allow_network)
    raise ArgumentError(f"unknown sandbox provider '{name}'; choose one of: {', '.join(PROVIDERS)}")


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
def _docker_provider(settings: SandboxConfig, allow_network: bool = False) -> SandboxProvider:
    from agent_env.sandbox._docker import DockerSandboxProvider

    return DockerSandboxProvider(settings, allow_network=allow_network)
