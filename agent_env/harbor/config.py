"""A Harbor task's `task.toml` (schema 1.x), read with this project's own models.

Each section keeps the fields Harbor documents; a field none of them knows is kept aside and named in
a warning (Harbor's format grows), never an error. Defaults are Harbor's: a verifier's 600 s, 1 CPU,
2048 MB of memory, 10240 MB of disk, the internet allowed (here only when the server allows it too).
"""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_env.sandbox.config import may_change_paths


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")

    def unknown_fields(self, prefix: str = "") -> list[str]:
        """Every field no model here knows, by its dotted path in task.toml."""
        found = [f"{prefix}{name}" for name in self.model_extra or {}]
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, _Section):
                found.extend(value.unknown_fields(f"{prefix}{name}."))
        return found


class TaskInfo(_Section):
    """`[task]`: the task's name (`org/name`) and what describes it."""

    name: str | None = None
    description: str = ""
    authors: list[Any] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class AgentSection(_Section):
    """`[agent]`: how long the agent may work."""

    timeout_sec: float | None = Field(None, gt=0)
    user: str | int | None = None


class VerifierSection(_Section):
    """`[verifier]`: tests/test.sh's time limit and environment."""

    timeout_sec: float = Field(600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None


class SolutionSection(_Section):
    """`[solution]`: solution/solve.sh's environment."""

    env: dict[str, str] = Field(default_factory=dict)


class EnvironmentSection(_Section):
    """`[environment]`: the container the agent works in."""

    build_timeout_sec: float = Field(600.0, gt=0)
    docker_image: str | None = None
    cpus: float = Field(1, gt=0)
    memory_mb: int = Field(2048, ge=16)
    storage_mb: int = Field(10240, ge=16)
    gpus: int = Field(0, ge=0)
    gpu_types: list[str] | None = None
    allow_internet: bool = True
    network_mode: str | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    workdir: str | None = Field(None, pattern=r"^/")
    env: dict[str, str] = Field(default_factory=dict)
    healthcheck: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    skills_dir: str | None = None
    memory: str | None = None
    storage: str | None = None


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

    @model_validator(mode="before")
    @classmethod
    def _version_renamed(cls, data: Any) -> Any:
        """Older task.toml files call `schema_version` `version`."""
        if isinstance(data, dict) and "version" in data:
            data = dict(data)
            data.setdefault("schema_version", data.pop("version"))
        return data


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
