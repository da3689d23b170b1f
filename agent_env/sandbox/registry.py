"""Sandbox providers by name, as bundles and the CLI select them."""

from __future__ import annotations

from agent_env.sandbox.base import SandboxProvider
from agent_env.sandbox.local import LocalSandboxProvider

PROVIDERS = ("local",)


def sandbox_provider(name: str | SandboxProvider) -> SandboxProvider:
    """The provider called `name` (a provider passes through unchanged)."""
    if not isinstance(name, str):
        return name
    if name == "local":
        return LocalSandboxProvider()
    raise ValueError(f"unknown sandbox provider '{name}'; choose one of: {', '.join(PROVIDERS)}")
