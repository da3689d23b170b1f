"""What plays a sample: a policy turns the conversation so far and the tools into one assistant message.

The conversation and the tools are in the OpenAI chat format (the one chat templates read too), so
an OpenAI-compatible endpoint is one policy and a local model another. `end_turn` is offered beside
the toolset's tools exactly as the trainer's classes describe it to TRL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agent_env._errors import AgentEnvError
from agent_env._specs import TaskSpec

Message = dict[str, Any]


class PolicyError(AgentEnvError):
    """The policy could not answer (its endpoint failed past its retries): the sample is an error,
    not a score of 0."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model wrote it: `arguments` is None when `raw_arguments` is not a JSON object."""

    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None = None

    @classmethod
    def parsed(cls, id: str, name: str, raw_arguments: str) -> ToolCall:
        try:
            arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except json.JSONDecodeError:
            arguments = None
        return cls(id, name, raw_arguments, arguments if isinstance(arguments, dict) else None)

    @property
    def valid(self) -> bool:
        return bool(self.name) and self.arguments is not None


@dataclass(frozen=True)
class AssistantMessage:
    """The model's answer: its text, and the tool calls it made (none ends the turn with the text)."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)

    def as_message(self) -> Message:
        """The answer as the next request's history carries it."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in self.tool_calls
            ]
        return message


class Policy(Protocol):
    """Anything that answers a conversation, given the tools it may call."""

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> AssistantMessage: ...


@runtime_checkable
class TaskPolicies(Protocol):
    """A policy made afresh for each sample, knowing its task, as a script needs (a `ScriptedPolicy`
    keeps its place, and each task has its own): `evaluate` asks `for_task(task)` once per sample,
    and leaves out a task it answers None for."""

    def for_task(self, task: TaskSpec) -> Policy | None: ...
