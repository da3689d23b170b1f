"""What the Task API says of a task, its toolset and its reference play: the models a server sends
and a trainer reads.

They are values of their own, with pydantic alone beneath them, so a trainer reads them without
importing the engine that makes them (`Task.spec`, `Toolset.spec`). A `Solution` is a line of a
bundle's `solutions/SPLIT.jsonl`; `agent_env` exports them all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

DEFAULT_ROLE = "default"


class AccessChange(BaseModel):
    """One `modify_env_tool_access` entry: enable or disable tools (or `*`) for a role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Literal["enable", "disable"]
    role: str = DEFAULT_ROLE
    tools: tuple[str, ...] | Literal["*"] = Field(
        description="Tool names, or '*' for every tool (of `env` when given)."
    )
    env: str | None = Field(default=None, description="Limit the change to this env's tools.")

    def applies_to(self, env: str, tool: str) -> bool:
        """Whether this change concerns `tool` of `env`."""
        if self.env is not None and self.env != env:
            return False
        return self.tools == "*" or tool in self.tools

    @property
    def label(self) -> str:
        """The change as it appears in a toolset's name, e.g. `-remove_crate` or `+dock.*`."""
        sign = "+" if self.action == "enable" else "-"
        names = ("*",) if self.tools == "*" else self.tools
        prefix = f"{self.env}." if self.env else ""
        return ",".join(f"{sign}{prefix}{name}" for name in names)


class ToolsetSpec(BaseModel):
    """A toolset as the Task API describes it: its names, and the tools it offers (no classes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    envs: tuple[str, ...]
    role: str
    access: tuple[AccessChange, ...] = ()
    bash: bool = False
    tools: tuple[dict[str, Any], ...] | None = Field(
        default=None,
        description="Each tool's JSON Schema, `bash` last when offered; null when the toolset's tools "
        "are known only once an episode is deployed (then a trainer plays one of its tasks to list them).",
    )
    tool_timeouts: dict[str, float] = Field(
        default_factory=dict,
        description="Each tool's own deadline in seconds, for the tools that declare one (bash's is the "
        "sandbox's command deadline plus KILL_MARGIN_S): the server cuts a call off at the smaller of it "
        "and the client's. Listed beside the schemas, which are what the model sees. Empty when `tools` is "
        "null: then the deadlines come with the tools, at reset.",
    )


class VerifierSummary(BaseModel):
    """A verifier as the Task API describes it: its type and its weight in the task's score (what it
    checks stays on the server, so no client can fit its answer to it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str
    weight: float


class TaskSpec(BaseModel):
    """A task as the Task API describes it."""

    model_config = ConfigDict(frozen=True)

    id: str
    split: str
    index: int
    prompt: list[dict[str, str]]
    turns: int = Field(description="How many turns the task fixes (the first's message is in `prompt`).")
    user: Literal["function", "model"] | None = Field(
        default=None,
        description="Who writes the turns after the fixed ones, as the agent replies: a function of the "
        "bundle's, or a chat model; null when the fixed turns are all.",
    )
    max_turns: int | None = Field(
        default=None, description="The most turns an episode may have; equal to `turns` without a user."
    )
    toolset: ToolsetSpec
    verifiers: tuple[VerifierSummary, ...] = ()


class ScriptedCall(BaseModel):
    """One tool call of a scripted turn."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


def _step_kind(value: Any) -> str | None:
    """Which form an entry of a turn's `calls` has: a call, or a list of calls made together."""
    if isinstance(value, list | tuple):
        return "step"
    return "call" if isinstance(value, dict | ScriptedCall) else None


ScriptedStep = Annotated[
    Annotated[ScriptedCall, Tag("call")] | Annotated[list[ScriptedCall], Tag("step")],
    Discriminator(
        _step_kind,
        custom_error_type="step_invalid",
        custom_error_message='each entry of "calls" is a call, {"tool": NAME, "arguments": {...}}, or a list '
        "of calls the agent makes together in one answer",
    ),
]
"""An entry of a turn's `calls`: one call (a step of its own), or a list of calls made in one answer."""
STEP_TAGS = ("call", "step")
"""The union's tags, which pydantic puts in an error's location: `validation_problems(tags=)` drops them."""


class ScriptedTurn(BaseModel):
    """One scripted turn: its steps, in order, then the reply that ends it.

    A step is one answer of the agent: its calls are made together, and the next step is made once
    their results are in. In `calls`, a call is a step of its own (the common case: a call that
    needs the previous one's result, such as `unlock_account` after `find_user`); calls the agent
    makes together, independent of each other, are a list, one entry of `calls`:
    `[{"tool": "find_user", ...}, [{"tool": "a", ...}, {"tool": "b", ...}], {"tool": "c", ...}]` is
    three steps.
    """

    model_config = ConfigDict(extra="forbid")

    calls: list[ScriptedStep] = Field(
        default_factory=list,
        description="The turn's steps in order: a call is a step of its own; a list of calls is one step, "
        "its calls made together in one answer.",
    )
    reply: str = ""

    @field_validator("calls", mode="before")
    @classmethod
    def _steps_are_lists_of_calls(cls, calls: Any) -> Any:
        if not isinstance(calls, list | tuple):
            return calls  # pydantic says it is no list
        from agent_env._errors import ArgumentError  # here: `import agent_env._specs` stays one module

        for number, step in enumerate(calls, start=1):
            if not isinstance(step, list | tuple):
                continue
            if not step:
                raise ArgumentError(
                    f"step {number} is an empty list: remove it, or list in it the calls the agent makes "
                    "together"
                )
            if any(isinstance(call, list | tuple) for call in step):
                raise ArgumentError(
                    f"step {number} holds a list in a list: a step is one list of calls made together; "
                    "write calls made one after the other as entries of their own"
                )
        return calls

    @property
    def steps(self) -> tuple[tuple[ScriptedCall, ...], ...]:
        """The turn's steps in order, each the calls of one answer."""
        return tuple(tuple(step) if isinstance(step, list) else (step,) for step in self.calls)

    @property
    def all_calls(self) -> tuple[ScriptedCall, ...]:
        """Every call of the turn, in the order they are made."""
        return tuple(call for step in self.steps for call in step)


class Solution(BaseModel):
    """A task's reference play, a line of `solutions/SPLIT.jsonl`: its turns scripted, and the score
    it should get."""

    model_config = ConfigDict(extra="forbid")

    id: str
    turns: list[ScriptedTurn]
    expected_score: float = Field(1.0, ge=0, le=1)


class SolutionSpec(BaseModel):
    """A task's reference play as the Task API gives it: the task's index in its split, and the script."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    script: Solution


MAX_GROUP_SIZE = 64
"""The most rollouts of a GRPO group an end_turn may name (its `group_size`), which a relative judge
reads in one request: beyond it, a request no judge model reads well; a trainer cuts a longer run of
one task's rollouts into groups of at most this many."""
MAX_GROUP_KEY_LENGTH = 128
"""The longest group key an end_turn may name."""
CURRICULUM_RUN_LENGTH = 128
"""The longest run key a curriculum request may name (in a body or a path)."""


class CurriculumDraw(BaseModel):
    """A GRPO group's task asked of the server's online curriculum (`agent_env._curriculum`): the run
    (a key of the trainer's), the split, the group (a key of the trainer's, the same for each of the
    group's rollouts: each gets the same task), and the policy and seed the run's curriculum starts
    with at its first draw."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: str = Field(min_length=1, max_length=CURRICULUM_RUN_LENGTH)
    split: str = Field(min_length=1, max_length=256)
    group: str = Field(min_length=1, max_length=128)
    policy: dict[str, float] = Field(default_factory=dict)
    seed: int = 0


class CurriculumDrawn(BaseModel):
    """The task drawn for a group: its index in the split, its id and its prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    task_id: str
    prompt: list[dict[str, str]]


class CurriculumScore(BaseModel):
    """One rollout's score, told to the run's curriculum for the group it was drawn for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: str = Field(min_length=1, max_length=CURRICULUM_RUN_LENGTH)
    split: str = Field(min_length=1, max_length=256)
    group: str = Field(min_length=1, max_length=128)
    score: float = Field(ge=0, le=1, allow_inf_nan=False)


def tasks_fingerprint(splits: Mapping[str, Sequence[TaskSpec]], *, content: str | None = None) -> str:
    """What decides a server's tasks and their scores, as one digest: every task spec its Task API
    lists, split by split, and `content`, the digest of the files they come from (a loaded bundle's
    `Bundle.content_digest`: verifiers' expectations, seeds, code). Servers that give the same one
    serve the same tasks, scored alike, so a trainer may spread its sessions over them; served tasks
    that are no bundle's (`agent_env.testing`'s fakes) have no content digest, and their specs alone
    count."""
    listed = {split: [spec.model_dump(mode="json") for spec in specs] for split, specs in splits.items()}
    covered: dict[str, Any] = listed if content is None else {"splits": listed, "content": content}
    text = json.dumps(covered, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
