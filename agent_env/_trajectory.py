"""What one episode did, as a record: the schema of `--record` and of `agent-env eval --out`.

A trajectory is one JSON line: the task, each turn's prompt, tool calls (with their arguments, result
or error, and time) and reply, each verifier's score, the score, how the episode ended and how long
its phases took. The server writes it from the episode's own events (`trajectory_of`, in
agent_env._episode_trajectory, so that this schema depends on the events alone); eval writes the same
model from what its client saw. The schema is versioned (`SCHEMA_VERSION`); its JSON Schema is
`docs/trajectory.schema.json`, which a test keeps equal to `Trajectory.model_json_schema()`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from agent_env._events import (
    Deployed,
    EpisodeEvent,
    ToolAnswered,
    ToolCalled,
    TurnEnded,
)

SCHEMA_VERSION: Literal[1] = 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskRef(_Record):
    """Which task was played."""

    split: str
    index: int
    id: str
    toolset: str


class ToolCallRecord(_Record):
    """One tool call: what was asked, and what came back (a result, or the error the agent saw)."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None
    error_code: str | None = None
    error: str | None = None
    seconds: float | None = Field(default=None, description="How long the call took, when known.")
    step: int | None = Field(
        default=None,
        ge=1,
        exclude_if=lambda step: step is None,
        description="Eval: which of the model's answers in the turn made the call (1 for its first): calls "
        "of one step were made together, before any of their results came. Left out when unknown: a "
        "server sees calls one at a time, so in its recording each call is a step of its own.",
    )


class TurnRecord(_Record):
    """One turn: the user's message that opened it, the calls made in it, the reply that ended it."""

    turn: int = Field(ge=1)
    prompt: str
    prompt_by: Literal["task", "simulated user"] = Field(
        default="task",
        description="Who wrote the turn's message: the task (its fixed turns) or its simulated user.",
    )
    calls: list[ToolCallRecord] = Field(default_factory=list)
    reply: str | None = Field(default=None, description="Null if the episode ended within the turn.")
    invalid_tool_calls: int = Field(
        default=0,
        ge=0,
        description="Eval: replies meant as tool calls that did not parse (they ended the turn).",
    )

    @property
    def steps(self) -> list[list[ToolCallRecord]]:
        """The turn's calls by the model's answer (step) that made them, in order: a call whose step
        is unknown (a server's recording sees calls one at a time) is a step of its own."""
        steps: list[list[ToolCallRecord]] = []
        for call in self.calls:
            if steps and call.step is not None and steps[-1][-1].step == call.step:
                steps[-1].append(call)
            else:
                steps.append([call])
        return steps


class VerifierRecord(_Record):
    """One verifier's score, with its type and its weight in the task's score, and what it said."""

    type: str
    name: str = Field(
        default="",
        description="What a person reads the verifier as (`Verifier.name`): a function verifier's "
        "function, such as `check_answer`; else its type. Left out when it is its type, and by a "
        "client's recording (the Task API names verifiers by type).",
    )
    weight: float
    score: float
    components: dict[str, float] = Field(
        default_factory=dict,
        description="The verifier's own named rewards, when it has any (a Harbor task's reward.json); "
        "left out when it has none.",
    )
    detail: str = Field(
        default="",
        description="What the verifier said beside its score, as plain text for a person to read: for a "
        "Harbor task's test.sh and a `bash` check, the end of its output (its last 50 lines, at most "
        "4 KiB, escape codes removed). Left out when it said nothing.",
    )

    @model_serializer(mode="wrap")
    def _without_empty_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A verifier without named rewards, a detail or a name of its own is written as before they
        existed."""
        data: dict[str, Any] = handler(self)
        for name in ("components", "detail", "name"):
            if not data.get(name):
                data.pop(name, None)
        return data


class OutcomeRecord(_Record):
    """How the episode ended: scored, failed (with its error code), abandoned unfinished, or, in eval
    only, an error of the model's side (its endpoint failed past its retries): never scored 0."""

    kind: Literal["scored", "failed", "abandoned", "error"]
    code: str | None = None
    reason: str = ""


class Timings(_Record):
    """Seconds each phase took; null when the episode did not reach it."""

    deploy_s: float | None = None
    verify_s: float | None = None
    teardown_s: float | None = None
    total_s: float | None = None


class Trajectory(_Record):
    """One episode, as `--record` and `agent-env eval` write it (one JSON line each)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    recorded_by: Literal["server", "eval"]
    client: str | None = Field(default=None, description="The label the client sent with its reset, if any.")
    model: str | None = Field(default=None, description="Eval: the model that played.")
    task: TaskRef
    system_prompt: str | None = None
    started_at: float | None = Field(default=None, description="Seconds since the epoch.")
    ended_at: float | None = None
    turns: list[TurnRecord] = Field(default_factory=list)
    verifiers: list[VerifierRecord] = Field(default_factory=list)
    score: float | None = None
    outcome: OutcomeRecord
    timings: Timings = Field(default_factory=Timings)

    @property
    def tool_calls(self) -> int:
        return sum(len(turn.calls) for turn in self.turns)

    @property
    def tool_failures(self) -> int:
        return sum(1 for turn in self.turns for call in turn.calls if call.error_code is not None)


def turn_records(events: Sequence[EpisodeEvent], prompts: Sequence[str]) -> list[TurnRecord]:
    """The conversation an episode's events hold, turn by turn (`prompts` are the task's fixed turns,
    from which the first is taken; a later one comes with the event that opened it)."""
    return [TurnRecord.model_validate(turn) for turn in _turns_of(events, prompts)]


def _turns_of(events: Sequence[EpisodeEvent], prompts: Sequence[str]) -> list[dict[str, Any]]:
    """The turns as plain data, for one validation of the whole trajectory."""
    turns: list[dict[str, Any]] = []
    pending: dict[int, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, Deployed):
            turns.append(_turn_record(1, prompts[0], len(prompts)))
        elif isinstance(event, ToolCalled):
            record = {"tool": event.tool, "arguments": dict(event.arguments)}
            _turn(turns, event.turn, prompts)["calls"].append(record)
            pending[event.turn] = record
        elif isinstance(event, ToolAnswered):
            answered = pending.pop(event.turn, None)
            if answered is not None:
                answered.update(
                    result=event.result, error_code=event.error_code, error=event.error, seconds=event.seconds
                )
        elif isinstance(event, TurnEnded):
            _turn(turns, event.turn, prompts)["reply"] = event.reply
            if event.prompt is not None:
                turns.append(_turn_record(event.turn + 1, event.prompt, len(prompts)))
    return turns


def _turn_record(number: int, prompt: str, fixed: int) -> dict[str, Any]:
    """Turn `number`'s record; a turn past the task's `fixed` ones is its simulated user's."""
    by = "task" if number <= fixed else "simulated user"
    return {"turn": number, "prompt": prompt, "prompt_by": by, "calls": []}


def _turn(turns: list[dict[str, Any]], number: int, prompts: Sequence[str]) -> dict[str, Any]:
    """The record of turn `number`, made if the events have not opened it (they always do)."""
    if not turns or turns[-1]["turn"] != number:
        turns.append(
            _turn_record(number, prompts[number - 1] if number <= len(prompts) else "", len(prompts))
        )
    return turns[-1]
