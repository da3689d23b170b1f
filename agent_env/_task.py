"""Tasks and played agents: what a bundle's files say, and the checked values the engine plays.

The `*Config`/`*Entry` models are the file formats (pydantic, unknown fields refused so a typo is an
error rather than a silent default); `Agent` and `Task` are what loading makes of them once every
name they use has been resolved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_env._contracts.judges import JudgeConfig
from agent_env._contracts.mcp_settings import McpServerConfig
from agent_env._contracts.sandbox_settings import SandboxConfig
from agent_env._contracts.users import User, UserSpec
from agent_env._specs import (
    DEFAULT_ROLE,
    AccessChange,
    TaskSpec,
    VerifierSummary,
)
from agent_env._toolset import Toolset
from agent_env._verifiers import BashCheck, Verifier, VerifierSpec


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentConfig(_Strict):
    """A played agent in `bundle.toml`: `[agents.NAME]`."""

    envs: tuple[str, ...] = ()
    role: str = DEFAULT_ROLE
    bash: bool = Field(False, description="Whether its turns offer `bash` in a sandbox of its own.")
    system_prompt: str | None = None


class RecordConfig(_Strict):
    """`[record]` in `bundle.toml`: what a recorded trajectory must never hold."""

    redact_keys: tuple[str, ...] = Field(
        (), description="Tool arguments and JSON keys whose values are written as [redacted]."
    )
    redact_env: tuple[str, ...] = Field(
        (), description="Environment variables whose values are written as [redacted] wherever they appear."
    )


class BundleConfig(_Strict):
    """`bundle.toml`."""

    name: str | None = None
    description: str = ""
    agents: dict[str, AgentConfig] = Field(min_length=1)
    mcp: dict[str, McpServerConfig] = Field(
        default_factory=dict, description="MCP servers as envs, by env name (`[mcp.NAME]`)."
    )
    sandbox: SandboxConfig = SandboxConfig()
    record: RecordConfig = RecordConfig()
    judges: dict[str, JudgeConfig] = Field(
        default_factory=dict,
        description="Judges the tasks' `judge` verifiers share, by name (`[judges.NAME]`).",
    )


class FileSource(_Strict):
    """A sandbox file copied from the bundle (`{"source": "files/manifest.csv"}`)."""

    source: str


class TaskEntry(_Strict):
    """One task as a split's file holds it."""

    id: str = Field(min_length=1)
    agent: str
    turns: list[str] = Field(min_length=1, description="One user prompt per turn.")
    seed: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Seed data per env name.")
    files: dict[str, str | FileSource] = Field(
        default_factory=dict, description="Sandbox files: relative path to text, or to a bundle file."
    )
    modify_env_tool_access: list[AccessChange] = Field(default_factory=list)
    verifiers: list[VerifierSpec] = Field(min_length=1)
    aggregate: Literal["mean", "all_pass"] = "mean"
    user: UserSpec | None = Field(
        None, description="A simulated user, who writes the turns after `turns` as the agent replies."
    )


@dataclass(frozen=True)
class Agent:
    """The role the trained model plays in a task."""

    name: str
    envs: tuple[str, ...]
    role: str = DEFAULT_ROLE
    bash: bool = False
    system_prompt: str | None = None


@dataclass(frozen=True, eq=False)
class Task:
    """One item of a split, checked and ready to play."""

    id: str
    split: str
    index: int
    agent: Agent
    turns: tuple[str, ...]
    toolset: Toolset
    verifiers: tuple[Verifier, ...]
    aggregate: Literal["mean", "all_pass"] = "mean"
    seed: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    sandbox_settings: SandboxConfig = field(default_factory=SandboxConfig)
    """The bundle's `[sandbox]` settings (a sandbox itself is made per episode, by a provider)."""
    user: User | None = None
    """Who writes the turns after `turns`, if anyone: the task ends when it has no more to say."""
    time_limit_s: float | None = None
    """How long the agent has from the deploy on (a Harbor task's [agent] timeout_sec): a command
    running then is cut off, and the episode is scored as it stands; None: no limit of the task's."""

    @property
    def max_turns(self) -> int:
        """The most turns an episode of the task has: its fixed turns, or its user's bound."""
        return self.user.max_turns if self.user is not None else len(self.turns)

    @property
    def judged_in_groups(self) -> bool:
        """Whether a relative judge scores the task's episodes beside their GRPO group's, when the
        client names the group (`agent_env.judges._groups`)."""
        return any(v.judged_by is not None and v.judged_by.relative for v in self.verifiers)

    @property
    def needs_sandbox(self) -> bool:
        """A sandbox is made when the agent has bash, the task seeds files, or a verifier runs bash."""
        return (
            self.toolset.bash
            or bool(self.files)
            or any(isinstance(v.spec, BashCheck) for v in self.verifiers)
        )

    @property
    def tool_timeouts(self) -> dict[str, float]:
        """Each tool's own deadline in seconds, for the tools that declare one (bash's from the
        sandbox's command deadline): what the server cuts a call off at, unless the client's is smaller."""
        return self.toolset.tool_timeouts(self.sandbox_settings.command_timeout_s)

    @property
    def prompt(self) -> list[dict[str, str]]:
        """The chat messages that open the task: the system prompt, if any, and the first turn."""
        messages = (
            [{"role": "system", "content": self.agent.system_prompt}] if self.agent.system_prompt else []
        )
        return [*messages, {"role": "user", "content": self.turns[0]}]

    @property
    def spec(self) -> TaskSpec:
        """What the Task API tells a trainer about this task; cheap, and deploys nothing."""
        return TaskSpec(
            id=self.id,
            split=self.split,
            index=self.index,
            prompt=self.prompt,
            turns=len(self.turns),
            user=self.user.kind if self.user is not None else None,
            max_turns=self.max_turns,
            toolset=self.toolset.spec(command_timeout_s=self.sandbox_settings.command_timeout_s),
            verifiers=tuple(VerifierSummary(type=v.spec.type, weight=v.spec.weight) for v in self.verifiers),
        )
