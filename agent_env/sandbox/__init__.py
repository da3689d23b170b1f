"""Sandboxes where the played agent's bash commands run, and the providers that make them."""

from __future__ import annotations

from agent_env._contracts.registry import sandbox_names, sandbox_provider
from agent_env._contracts.sandbox import (
    DEFAULT_COMMAND_TIMEOUT_S,
    DEFAULT_MAX_OUTPUT_BYTES,
    KILL_MARGIN_S,
    CommandResult,
    RunsWithServer,
    Sandbox,
    SandboxProvider,
)
from agent_env._contracts.sandbox_settings import DEFAULT_IMAGE, SandboxConfig
from agent_env.sandbox._bubblewrap import ISOLATIONS
from agent_env.sandbox._by_task import SandboxesByTask
from agent_env.sandbox._docker import DockerSandbox, DockerSandboxProvider
from agent_env.sandbox._docker_engine import SANDBOX_LABEL
from agent_env.sandbox._docker_image import ImageBuildError, build_sandbox_image
from agent_env.sandbox._local import LocalSandbox, LocalSandboxProvider
from agent_env.sandbox._pool import PoolStatus, WarmPool
from agent_env.sandbox._registry import server_provider

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT_S",
    "DEFAULT_IMAGE",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "ISOLATIONS",
    "KILL_MARGIN_S",
    "SANDBOX_LABEL",
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
    "sandbox_names",
    "sandbox_provider",
    "server_provider",
]
