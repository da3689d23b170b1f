"""Sandboxes where the played agent's bash commands run, and the providers that make them."""

from __future__ import annotations

from agent_env.sandbox.base import (
    DEFAULT_COMMAND_TIMEOUT_S,
    DEFAULT_MAX_OUTPUT_BYTES,
    CommandResult,
    Sandbox,
    SandboxProvider,
)
from agent_env.sandbox.local import LocalSandbox, LocalSandboxProvider
from agent_env.sandbox.registry import sandbox_provider

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT_S",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "CommandResult",
    "LocalSandbox",
    "LocalSandboxProvider",
    "Sandbox",
    "SandboxProvider",
    "sandbox_provider",
]
