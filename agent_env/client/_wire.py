"""The wire contract of a session: what a client sends over `/ws` and what it gets back.

A session is OpenEnv's: `reset` with `split`, `index` and `timeout_s`, then steps. A step is an
`AgentEnvAction` of one of three kinds (call a tool, end the turn, list the tools); its deadline, if
any, travels in its metadata under `timeout_s`, since OpenEnv gives WebSocket steps none of their own.
Every answer is an `AgentEnvObservation`. A request the server cannot carry out is answered with an
observation whose `error` has a stable `code` (one of `ERROR_CODES`); the session stays usable.
`done` is true when the call ended the episode: scored (with the score as `reward`) or failed.

A session the server cannot hold (it is at `max_concurrent_envs`) is refused with OpenEnv's
`CAPACITY_REACHED` error frame, whose message `capacity_message` writes and `held_without_client`
reads back on the client. Both sides import this module (the server as `agent_env.openenv._wire`);
it imports nothing of the server, nor of the trainer's side.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_env import _error_types as errors
from agent_env._error_types import ErrorCode
from agent_env._private.openenv_core import Action, Observation, State

DEADLINE_KEY = "timeout_s"
"""The action metadata key that carries a step's deadline, in seconds."""

GROUP_KEY = "group"
"""The end_turn metadata key that names the episode's GRPO group, `{"key": TEXT, "size": N}`: a key
of the client's, the same for the group's rollouts on this server, and how many they are (2 to 64).
A task with a relative judge (`judged_in_groups` at its reset) is then judged beside them."""

MAX_LABEL_LENGTH = 200
"""The longest client label a reset takes (its `client`), which the episode's trajectory keeps."""

ERROR_CODES: dict[str, str] = {code.value: code.meaning for code in ErrorCode if code.on_wire}
"""Every code an error observation can carry, with what it means (`agent_env.ErrorCode`'s, eval's
own left out)."""

ENDING_CODES = errors.ENDING_CODES
"""Codes of errors that end the episode they happen in."""

Kind = Literal["call_tool", "end_turn", "list_tools"]

Phase = Literal["idle", "deploying", "turn_open", "verifying", "ended"]
"""Where a session's episode is: none yet, deploying, a turn open, verifying, or ended."""


class AgentEnvAction(Action):
    """One step of a session: call a tool, end the open turn with a reply, or list the tools."""

    kind: Kind = Field(
        description="call_tool (with tool and arguments), end_turn (with reply), or list_tools."
    )
    tool: str | None = Field(default=None, description="The tool to call (call_tool only).")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The tool's arguments (call_tool only)."
    )
    reply: str | None = Field(
        default=None, description="The agent's reply that ends the turn (end_turn only)."
    )

    @classmethod
    def call_tool(
        cls, tool: str, arguments: dict[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> AgentEnvAction:
        return cls(kind="call_tool", tool=tool, arguments=arguments or {}, metadata=_deadline(timeout_s))

    @classmethod
    def end_turn(
        cls, reply: str = "", *, timeout_s: float | None = None, group: tuple[str, int] | None = None
    ) -> AgentEnvAction:
        """End the open turn; `group` (key, size) names the episode's GRPO group (see `GROUP_KEY`)."""
        metadata = _deadline(timeout_s)
        if group is not None:
            metadata[GROUP_KEY] = {"key": group[0], "size": group[1]}
        return cls(kind="end_turn", reply=reply, metadata=metadata)

    @classmethod
    def list_tools(cls) -> AgentEnvAction:
        return cls(kind="list_tools")

    def wire(self) -> dict[str, Any]:
        """The action as the JSON object a client sends as a step's data."""
        wire: dict[str, Any] = self.model_dump(exclude_none=True)
        return wire


class CallError(BaseModel):
    """Why a call could not be carried out: a stable code, a message that says what to do, the call."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    call: str = Field(description="The call that failed, such as `reset train/3` or `call_tool add_crate`.")


class AgentEnvObservation(Observation):
    """The answer to a reset or a step; fields that do not apply to the call are null."""

    task_id: str | None = None
    split: str | None = None
    index: int | None = None
    turn: int | None = Field(default=None, description="The open turn, from 1; null once the episode ended.")
    turns: int | None = Field(
        default=None,
        description="How many turns the task fixes; a simulated user may add more (up to its max_turns).",
    )
    max_turns: int | None = Field(
        default=None,
        description="The most turns the episode may have: the task's fixed turns, or its simulated user's "
        "max_turns. Ending turn `max_turns` ends the task. An older server leaves it out.",
    )
    prompt: list[dict[str, str]] | None = Field(
        default=None,
        description="Chat messages: at reset the system prompt (if any) and the first turn; at an "
        "end_turn that opens the next turn, that turn's user message.",
    )
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="The toolset's tools as JSON Schemas (at reset and list_tools)."
    )
    tool_timeouts: dict[str, float] | None = Field(
        default=None,
        description="Beside `tools`: each tool's own deadline in seconds, for the tools that declare one. "
        "The server cuts a call off at the smaller of it and the step's `timeout_s`. An older server "
        "leaves it out: none is listed.",
    )
    result: str | None = Field(default=None, description="What the tool returned (call_tool).")
    verifier_scores: list[float] | None = Field(
        default=None, description="Each verifier's score, once scored."
    )
    error: CallError | None = None
    judged_in_groups: bool | None = Field(
        default=None,
        description="At a reset: whether a relative judge scores the task, beside the episode's GRPO "
        f"group when its last end_turn names one (metadata.{GROUP_KEY}). An older server leaves it out.",
    )
    tasks_fingerprint: str | None = Field(
        default=None,
        description="At a reset: the server's `tasks_fingerprint`, as its status gives it, so a client "
        "knows at each episode that the server still serves what it started with. An older server "
        "leaves it out.",
    )


class AgentEnvState(State):
    """A session's state, as OpenEnv's `state` message returns it."""

    task_id: str | None = None
    split: str | None = None
    index: int | None = None
    turn: int | None = None
    phase: Phase = "idle"


class SessionCounts(BaseModel):
    """The sessions that hold capacity now, by kind."""

    model_config = ConfigDict(frozen=True)

    held: int = Field(description="Sessions OpenEnv holds: what max_concurrent_envs is checked against.")
    websocket: int = Field(description="Held by a client connected to /ws now.")
    without_client: int = Field(
        description="Held with no client connected: always 0, unless a session outlived its client."
    )


_WITHOUT_CLIENT = re.compile(
    r"sessions held \(\d+ by WebSocket clients on /ws, (?P<count>\d+) without a client\)"
)


def capacity_message(counts: SessionCounts, max_sessions: int) -> str:
    """What a client refused for capacity is told: how many sessions are held, and of what kind."""
    return (
        f"Server at capacity: {counts.held}/{max_sessions} sessions held ({counts.websocket} by WebSocket "
        f"clients on /ws, {counts.without_client} without a client). Cannot accept new connections."
    )


def held_without_client(message: str) -> int:
    """How many sessions a capacity refusal's message says are held without a client; 0 if it does not say."""
    found = _WITHOUT_CLIENT.search(message)
    return int(found["count"]) if found else 0


def _deadline(timeout_s: float | None) -> dict[str, Any]:
    return {} if timeout_s is None else {DEADLINE_KEY: timeout_s}
