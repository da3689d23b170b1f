"""`[sandbox]` in `bundle.toml`: which provider runs `bash`, each command's limits, and the container's."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_env._contracts.sandbox import DEFAULT_COMMAND_TIMEOUT_S, DEFAULT_MAX_OUTPUT_BYTES, SandboxProvider
from agent_env._errors import ArgumentError

DEFAULT_IMAGE = "agent-env-sandbox:latest"
"""The image `agent-env sandbox-image` builds: bash and busybox's tools, nothing else."""


class SandboxConfig(BaseModel):
    """Every provider keeps the command limits and `work_mb`; `isolation` is the local sandbox's, the
    rest Docker's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = "local"
    command_timeout_s: float = Field(DEFAULT_COMMAND_TIMEOUT_S, gt=0)
    max_output_bytes: int = Field(DEFAULT_MAX_OUTPUT_BYTES, gt=0)
    isolation: Literal["auto", "bubblewrap", "none"] = Field(
        "auto",
        description="The local sandbox's confinement: bubblewrap when it runs here (auto), always, or never.",
    )
    image: str = Field(DEFAULT_IMAGE, min_length=1, description="Docker image each episode's container runs.")
    cpus: float = Field(1.0, gt=0, description="CPUs one container may use.")
    memory_mb: int = Field(512, ge=16, description="Memory one container may use, swap included.")
    pids_limit: int = Field(256, ge=8, description="Processes one container may hold at once.")
    user: str = Field(
        "1000:1000",
        pattern=r"^\d+(:\d+)?$",
        description="The uid[:gid] commands run as; the work folder is theirs. 0:0 is root.",
    )
    warm: int = Field(
        0,
        ge=0,
        le=1024,
        description="Docker: containers a server keeps started ahead of its episodes (a warm pool); 0: none.",
    )
    workdir: str | None = Field(
        None,
        pattern=r"^/",
        description="Docker: the image's own folder commands run in, its root filesystem writable (a Harbor "
        "task's [environment] workdir); unset: the in-memory /work of `work_mb` on a read-only root.",
    )
    storage_mb: int | None = Field(
        None,
        ge=16,
        description="Docker, with `workdir`: the writable root's size, where the engine can cap it.",
    )
    network: bool = Field(
        False,
        description="Docker: the task asks for a network for the agent's turns; only a server started "
        "allowing it gives one.",
    )
    verifier_network: bool | None = Field(
        None,
        description="Docker: the task asks for a network for its verifiers' commands, which run once the "
        "agent's last turn is over and the sandbox is sealed; unset: as `network`. Only a server started "
        "allowing it gives one.",
    )
    capabilities: tuple[str, ...] = Field(
        (), description="Docker: Linux capabilities the container keeps (none by default)."
    )
    environment: tuple[tuple[str, str], ...] = Field(
        (), description="Docker: environment variables every command sees, as (name, value) pairs."
    )
    work_mb: int = Field(
        128,
        ge=1,
        description="Docker: the size of the writable /work and /tmp (in memory). Local: the most one file "
        "a command writes may hold.",
    )
    may_change: tuple[str, ...] = Field(
        (),
        description="Docker: the system's files or folders (under /bin, /sbin, /usr, /lib*, /etc, the "
        "image's PATH folders) the agent's work may change, as absolute paths; any other change there "
        "leaves the episode unscorable (SYSTEM_CHANGED). Declare as little as the task needs: a verifier "
        "that runs what lies there runs what the agent made.",
    )

    @field_validator("may_change")
    @classmethod
    def _absolute_paths(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        return may_change_paths(paths)

    @property
    def verifiers_network(self) -> bool:
        """Whether the verifiers' phase asks for a network (`verifier_network`, else `network`)."""
        return self.network if self.verifier_network is None else self.verifier_network

    @property
    def asks_network(self) -> bool:
        """Whether any phase of an episode asks for a network."""
        return self.network or self.verifiers_network


def may_change_paths(paths: Iterable[str]) -> tuple[str, ...]:
    """`may_change` as given (bundle.toml's, a Harbor task's), each checked absolute and normalised."""
    checked = []
    for path in paths:
        if not path.startswith("/") or posixpath.normpath(path) == "/":
            raise ArgumentError(f"may_change holds {path!r}: write absolute paths below / (say '/etc/nginx')")
        checked.append(posixpath.normpath(path))
    return tuple(checked)


class SandboxFactory(Protocol):
    """What a sandbox provider registers as `sandbox.NAME` (`agent_env._contracts.registry`): its
    provider, made with a task's settings; `allow_network`: the server allows the network a task asks."""

    def __call__(self, settings: SandboxConfig, *, allow_network: bool) -> SandboxProvider: ...
