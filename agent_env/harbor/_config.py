"""A Harbor task's `task.toml` (schema 1.x, up to 1.4), read with this project's own models.

Each section keeps the fields Harbor documents; a field none of them knows is kept aside and named in
the load's summary (Harbor's format grows), never an error. Defaults are Harbor's: a verifier's 600 s,
1 CPU, 2048 MB of memory, 10240 MB of disk, the public network (here only when the server allows it
too). What the loader does with each field, applied or refused, is `agent_env.harbor._fields`'.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_env._contracts.sandbox_settings import may_change_paths
from agent_env._errors import ArgumentError


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")

    def unknown_fields(self, prefix: str = "") -> list[str]:
        """Every field no model here knows, by its dotted path in task.toml (a list's entries share
        their list's path: `verifier.collect.shell`)."""
        found = [f"{prefix}{name}" for name in self.model_extra or {}]
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            shown = f"{prefix}{info.alias or name}."
            for part in value if isinstance(value, list) else [value]:
                if isinstance(part, _Section):
                    found.extend(f for f in part.unknown_fields(shown) if f not in found)
        return found


NetworkMode = Literal["public", "no-network", "allowlist"]
"""Harbor's network policies: the whole internet, none, or only `allowed_hosts`."""


class TaskInfo(_Section):
    """`[task]`: the task's name (`org/name`) and what describes it."""

    name: str | None = None
    version: str | None = None
    description: str = ""
    authors: list[Any] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class AgentSection(_Section):
    """`[agent]`: how long the agent may work, and its phase's network (unset: `[environment]`'s)."""

    timeout_sec: float | None = Field(None, gt=0)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)


class CollectCommand(_Section):
    """`[[verifier.collect]]`: a command run in a service once the agent's phase is over, before the
    verifier."""

    command: str = Field(min_length=1)
    service: str = "main"
    timeout_sec: float = Field(60.0, gt=0)
    user: str | int | None = None


class VerifierSection(_Section):
    """`[verifier]`: tests/test.sh's time limit, environment and network (unset: `[environment]`'s)."""

    timeout_sec: float = Field(600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    environment_mode: Literal["shared", "separate"] = "shared"
    environment: dict[str, Any] | None = None
    continuous: dict[str, Any] | None = None
    collect: list[CollectCommand] = Field(default_factory=list)


class SolutionSection(_Section):
    """`[solution]`: solution/solve.sh's environment."""

    env: dict[str, str] = Field(default_factory=dict)


class EnvironmentSection(_Section):
    """`[environment]`: the container the agent works in, and every phase's network unless a phase
    says otherwise."""

    build_timeout_sec: float = Field(600.0, gt=0)
    docker_image: str | None = None
    os: Literal["linux", "windows"] = "linux"
    cpus: float = Field(1, gt=0)
    memory_mb: int = Field(2048, ge=16)
    storage_mb: int = Field(10240, ge=16)
    gpus: int = Field(0, ge=0)
    gpu_types: list[str] | None = None
    tpu: dict[str, Any] | None = None
    allow_internet: bool = True
    """Deprecated: `network_mode` "public" (true) or "no-network" (false), unless that is written."""
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    workdir: str | None = Field(None, pattern=r"^/")
    env: dict[str, str] = Field(default_factory=dict)
    healthcheck: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    skills_dir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _sizes_as_strings(cls, data: Any) -> Any:
        """The deprecated `memory = "4G"` and `storage = "10G"` as Harbor reads them: their MB, which
        an explicit `memory_mb` / `storage_mb` must not contradict."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if old not in data:
                continue
            megabytes = size_mb(data.pop(old), old, new)
            if new in data and data[new] != megabytes:
                raise ArgumentError(
                    f"'{old}' ({megabytes} MB) and '{new}' ({data[new]!r}) disagree: keep only {new}"
                )
            data[new] = megabytes
        return data


class AgentEnvSection(_Section):
    """`[agent-env]`: this project's own settings of a task, which Harbor itself does not read."""

    may_change: tuple[str, ...] = Field(
        (),
        description="The system's files or folders the task's work changes (installing a package, "
        "configuring a service), as absolute paths: any other change there leaves an episode unscorable.",
    )

    @field_validator("may_change")
    @classmethod
    def _absolute_paths(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        return may_change_paths(paths)


class ArtifactEntry(_Section):
    """An `[[artifacts]]` entry written as a table: a path in the container, and where it goes."""

    source: str = Field(min_length=1)
    destination: str | None = None
    exclude: list[str] = Field(default_factory=list)
    service: str = "main"


class TaskToml(_Section):
    """`task.toml`."""

    schema_version: str = "1.1"
    task: TaskInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierSection = VerifierSection()
    agent: AgentSection = AgentSection()
    environment: EnvironmentSection = EnvironmentSection()
    solution: SolutionSection = SolutionSection()
    agent_env: AgentEnvSection = Field(AgentEnvSection(), alias="agent-env")
    source: str | None = None
    artifacts: list[str | ArtifactEntry] = Field(default_factory=list)
    steps: list[dict[str, Any]] | None = None
    multi_step_reward_strategy: Literal["mean", "final"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _version_renamed(cls, data: Any) -> Any:
        """Older task.toml files call `schema_version` `version`."""
        if isinstance(data, dict) and "version" in data:
            data = dict(data)
            data.setdefault("schema_version", data.pop("version"))
        return data


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([GMK]?)\s*$", re.IGNORECASE)
_PER_MB = {"G": 1024.0, "M": 1.0, "": 1.0, "K": 1 / 1024}


def size_mb(value: Any, old: str, new: str) -> int:
    """A deprecated size (`"4G"`, `"512M"`, `"2048K"`) in MB, as Harbor reads it: gigabytes times 1024,
    megabytes as they are, kilobytes over 1024."""
    match = _SIZE.match(value) if isinstance(value, str) else None
    if match is None:
        raise ArgumentError(f'\'{old}\' = {value!r} is not a size such as "4G" or "512M": write {new} (MB)')
    return int(float(match.group(1)) * _PER_MB[match.group(2).upper()])


_TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def resolve_env(values: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """`values` with each `${VAR}` / `${VAR:-default}` taken from this process's environment, as
    Harbor does; the names of the variables that are unset and have no default."""
    missing: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        missing.append(name)
        return ""

    return {key: _TEMPLATE.sub(substitute, value) for key, value in values.items()}, missing
