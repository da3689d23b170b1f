"""Sandbox providers by name, as bundles and the CLI select them."""

from __future__ import annotations

import functools

from agent_env.sandbox.base import SandboxProvider
from agent_env.sandbox.config import SandboxConfig
from agent_env.sandbox.local import LocalSandboxProvider

PROVIDERS = ("local", "docker")


def sandbox_provider(name: str | SandboxProvider, settings: SandboxConfig | None = None) -> SandboxProvider:
    """The provider called `name`, made with `settings` (a provider passes through unchanged).

    A Docker provider checks its engine and image when it is made, and is made once per settings.
    """
    if not isinstance(name, str):
        return name
    if name == "local":
        chosen = settings or SandboxConfig()
        return LocalSandboxProvider(isolation=chosen.isolation, max_file_mb=chosen.work_mb)
    if name == "docker":
        return _docker_provider(settings or SandboxConfig(provider="docker"))
    raise ValueError(f"unknown sandbox provider '{name}'; choose one of: {', '.join(PROVIDERS)}")


@functools.cache
def _docker_provider(settings: SandboxConfig) -> SandboxProvider:
    from agent_env.sandbox.docker import DockerSandboxProvider

    return DockerSandboxProvider(settings)
