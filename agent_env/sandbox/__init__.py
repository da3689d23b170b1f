"""Sandboxes where the played agent's bash commands run, and the providers that make them."""

from __future__ import annotations

from agent_env.sandbox.base import (
    DEFAULT_COMMAND_TIMEOUT_S,
    DEFAULT_MAX_OUTPUT_BYTES,
    KILL_MARGIN_S,
    CommandResult,
    RunsWithServer,
    Sandbox,
    SandboxProvider,
)
from agent_env.sandbox.bubblewrap import ISOLATIONS
from agent_env.sandbox.by_task import SandboxesByTask
from agent_env.sandbox.config import DEFAULT_IMAGE, SandboxConfig
from agent_env.sandbox.docker import DockerSandbox, DockerSandboxProvider
from agent_env.sandbox.docker_image import ImageBuildError, build_sandbox_image
from agent_env.sandbox.local import LocalSandbox, LocalSandboxProvider
from agent_env.sandbox.pool import PoolStatus, WarmPool
from agent_env.sandbox.registry import PROVIDERS, sandbox_provider, server_provider

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT_S",
    "DEFAULT_IMAGE",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "ISOLATIONS",
    "KILL_MARGIN_S",
    "PROVIDERS",
    "CommandResult",
    "DockerSandbox",
    "DockerSandboxProvider",
    "ImageBuildError",
    "LocalSandbox",
    "LocalSandboxProvider",
    "PoolStatus",
    "RunsWithServer",
    "Sandbox",
    "SandboxConfig",
    "SandboxProvider",
    "SandboxesByTask",
    "WarmPool",
    "build_sandbox_image",
    "sandbox_provider",
    "server_provider",
]
