"""What the loader does with a task.toml's fields beyond the container's image and limits: each phase's
network (applied), the fields it refuses (why, and what to write instead), and those it accepts
without applying (named once per dataset, `agent_env.harbor._notes`).

A field that would change what the agent may reach is applied or refused, never ignored:
docs/guides/harbor.md has the table of every field.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_env.harbor._config import TaskToml

ALLOWLIST = (
    "an allowlist of hosts cannot be enforced here: a container's network reaches every host or none "
    "(the Docker engine filters no host by name), so the task would reach more than it says. Write "
    'network_mode = "public" (the whole internet, given only where the server allows it: '
    '--allow-internet) or "no-network", for that phase or the whole task'
)
ROOT = "not applied, commands run as root"
HEALTHCHECK = (
    "not run: the first turn opens once the container's shell answers, and no service an image starts "
    "outlives a command here"
)
SKILLS = "not installed: the agent here is a model with the bash tool alone"
ARTIFACTS = (
    "not collected: Harbor gathers them after a trial for people to read; the score is test.sh's reward "
    "alone, which does not depend on them"
)


@dataclass(frozen=True)
class PhaseNetworks:
    """Whether each phase of an episode asks for the public network (a server still has to allow it)."""

    agent: bool
    verifier: bool


def phase_networks(config: TaskToml) -> PhaseNetworks:
    """Harbor's rule: a phase's own `network_mode` overrides `[environment]`'s, which is "public" by
    default, or as the deprecated `allow_internet` says when `network_mode` is not written."""
    environment = config.environment
    baseline = environment.network_mode or ("public" if environment.allow_internet else "no-network")
    return PhaseNetworks(
        agent=(config.agent.network_mode or baseline) == "public",
        verifier=(config.verifier.network_mode or baseline) == "public",
    )


def refusals(config: TaskToml) -> list[tuple[str, str]]:
    """Each field the task cannot run with here, by its path in task.toml, with why and what to do."""
    environment, verifier = config.environment, config.verifier
    refused: list[tuple[str, str]] = []
    if environment.os == "windows":
        refused.append(
            (
                "environment.os",
                "Windows containers are not supported: a task runs in a Linux container, driven by its "
                "bash. Run it with Harbor on a Windows host",
            )
        )
    if environment.gpus > 0 or environment.gpu_types:
        refused.append(
            (
                "environment.gpus",
                "GPUs are not supported: a container here gets no GPU device. If the task runs on CPUs, "
                "write gpus = 0 and remove gpu_types; else run it with Harbor on a backend with GPUs",
            )
        )
    if environment.tpu is not None:
        refused.append(
            (
                "environment.tpu",
                "TPUs are not supported: a container here gets no accelerator. If the task runs on CPUs, "
                "remove [environment.tpu]; else run it with Harbor on a backend with TPUs",
            )
        )
    if environment.mcp_servers:
        refused.append(
            (
                "environment.mcp_servers",
                "MCP servers in a Harbor task are not supported: serve the tools as a bundle's MCP env",
            )
        )
    for section, phase in (("environment", environment), ("agent", config.agent), ("verifier", verifier)):
        if phase.network_mode == "allowlist":
            refused.append((f"{section}.network_mode", ALLOWLIST))
        elif phase.allowed_hosts:
            refused.append((f"{section}.allowed_hosts", ALLOWLIST))
    separate = (
        "a separate verifier environment is not supported: test.sh runs in the task's own container once "
        "the agent's turns are over, its changes checked first"
    )
    if verifier.environment_mode == "separate":
        fix = 'Write environment_mode = "shared" if test.sh can run there'
        refused.append(("verifier.environment_mode", f"{separate}. {fix}"))
    if verifier.environment is not None:
        refused.append(("verifier.environment", f"{separate}. Remove [verifier.environment]"))
    if verifier.continuous is not None and verifier.continuous.get("enabled", True) is not False:
        refused.append(
            (
                "verifier.continuous",
                "continuous verification is not supported: test.sh runs once, after the agent's last turn. "
                "Remove [verifier.continuous] (or write enabled = false)",
            )
        )
    services = sorted({c.service for c in verifier.collect if c.service != "main"})
    if services:
        named = ", ".join(f"'{s}'" for s in services)
        refused.append(
            (
                "verifier.collect",
                f"runs commands in service {named}: a task here is one container, 'main' (compose "
                "services other than main are refused). Run them in 'main', or remove them",
            )
        )
    if config.steps:
        refused.append(
            (
                "steps",
                "multi-step tasks are not supported: keep one instruction.md and one tests/test.sh per task",
            )
        )
    return refused


def not_applied(config: TaskToml) -> list[tuple[str, str]]:
    """Each field the task runs without, by its path, with why its absence changes nothing it may reach."""
    noted: list[tuple[str, str]] = []
    if config.agent.user is not None:
        noted.append(("agent.user", ROOT))
    if config.verifier.user is not None:
        noted.append(("verifier.user", ROOT))
    if any(command.user is not None for command in config.verifier.collect):
        noted.append(("verifier.collect.user", ROOT))
    if config.environment.healthcheck is not None:
        noted.append(("environment.healthcheck", HEALTHCHECK))
    if config.environment.skills_dir is not None:
        noted.append(("environment.skills_dir", SKILLS))
    if config.artifacts:
        noted.append(("artifacts", ARTIFACTS))
    return noted
