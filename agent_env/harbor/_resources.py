"""A task's CPUs and memory against what the Docker engine has (`docker info`'s NCPU and MemTotal).

More CPUs than the engine has are clamped to its count, said once per dataset: Docker refuses such a
quota at every container's start, and the engine's every CPU is all a larger quota would give anyway.
More memory than it has is refused: Docker would take it as no limit at all, and the task, written
for more than this machine holds, would be killed mid-episode for the host's want, not the agent's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_env.harbor._config import TaskToml

CLAMPED = (
    "more CPUs than the Docker engine has ({cpus}) are asked for by {count}: {tasks}; each gets the "
    "engine's {cpus}, all a larger quota could give it (write cpus = {cpus} or less to say so, or load them "
    "where the engine has more)"
)


@dataclass(frozen=True)
class EngineLimits:
    """The most one container can be given: the engine's CPUs and its memory (MiB)."""

    cpus: int
    memory_mb: int

    @classmethod
    def of(cls, client: Any) -> EngineLimits | None:
        """The engine's limits; None if it does not say (its own refusal comes at the first reset)."""
        try:
            info = client.info()
            return cls(int(info["NCPU"]), int(info["MemTotal"]) // 2**20)
        except Exception:
            return None

    def clamped(self, config: TaskToml) -> TaskToml | None:
        """`config` with its CPUs cut to the engine's; None if it fits as it is."""
        environment = config.environment
        if environment.cpus <= self.cpus:
            return None
        return config.model_copy(
            update={"environment": environment.model_copy(update={"cpus": float(self.cpus)})}
        )

    def memory_problem(self, config: TaskToml) -> str | None:
        """Why the task's memory cannot be given here, and what to do; None if it can."""
        asked = config.environment.memory_mb
        if asked <= self.memory_mb:
            return None
        return (
            f"asks for {asked} MB, and the Docker engine has {self.memory_mb} MB in all: write memory_mb = "
            f"{self.memory_mb} or less, or load the tasks where the engine has more"
        )
