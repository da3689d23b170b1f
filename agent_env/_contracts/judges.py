"""A judge as files declare it (pydantic alone): `[judges.NAME]` in bundle.toml, a task's `judge`
verifier's own fields, and `Judge`, the two merged at load with the rubric read: what a judgement asks.

A task's verifier names a shared judge (`"judge": NAME`) and may override any of its fields, or gives
every field itself. The endpoint is any OpenAI-compatible chat-completions API; its key is read from
the environment variable `api_key_env` names, never from a file. The server's own settings
(`agent_env.judges._judging.Judging`: `--judge-url`, `--judge-model`) override the endpoint and the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_env._errors import ArgumentError
from agent_env._specs import MAX_GROUP_KEY_LENGTH, MAX_GROUP_SIZE

if TYPE_CHECKING:
    from agent_env._trajectory import TurnRecord

Reads = Literal["prompt", "calls", "reply"]
"""What of an episode a judge reads: the task's prompts (the system prompt and each turn's message),
the tool calls with their results, the agent's replies."""
READS: tuple[Reads, ...] = ("prompt", "calls", "reply")
ResponseFormat = Literal["json_schema", "json_object", "none"]
"""What the request asks the endpoint for: a JSON Schema it holds the answer to (OpenAI's structured
outputs, vLLM's guided decoding), any JSON object, or nothing (the answer is parsed as strictly)."""

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRIES = 2
DEFAULT_MAX_CONCURRENCY = 8
MAX_SCALE_STEPS = 1000
"""The widest scale: an integer score over more steps than this is no judgement a model makes."""


class JudgeScale(BaseModel):
    """The integers a judge scores with, `min` (fails the rubric) to `max` (meets it fully); a score is
    normalised to [0, 1] as (score - min) / (max - min)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min: int = 0
    max: int = 10

    @model_validator(mode="after")
    def _ordered(self) -> JudgeScale:
        if self.max <= self.min:
            raise ArgumentError(f"the scale's max ({self.max}) must be above its min ({self.min})")
        if self.max - self.min > MAX_SCALE_STEPS:
            raise ArgumentError(f"a scale spans at most {MAX_SCALE_STEPS} steps; use, say, 0 to 10")
        return self

    def normalised(self, score: int) -> float:
        return (score - self.min) / (self.max - self.min)


class JudgeFields(BaseModel):
    """What both a shared judge (`[judges.NAME]`) and a task's `judge` verifier may say; a field a
    task's verifier gives overrides its shared judge's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = Field(
        None, pattern=r"^https?://", description="An OpenAI-compatible endpoint's base URL (…/v1)."
    )
    model: str | None = Field(None, min_length=1, description="The judge's model, as the endpoint names it.")
    api_key_env: str | None = Field(
        None, min_length=1, description="The environment variable that holds the endpoint's key, if any."
    )
    rubric: str | None = Field(None, min_length=1, description="What the judge scores, in words.")
    rubric_file: str | None = Field(
        None, min_length=1, description="A file of the bundle holding the rubric, instead of `rubric`."
    )
    reads: tuple[Reads, ...] | None = Field(
        None, min_length=1, description='What the judge reads: "prompt", "calls", "reply" (default: all).'
    )
    scale: JudgeScale | None = Field(None, description="The integer scale (default: 0 to 10).")
    timeout_s: float | None = Field(
        None, gt=0, description="Each judgement's deadline, its retries included (default: 60)."
    )
    retries: int | None = Field(
        None, ge=0, le=10, description="Retries of a failed request: unreachable, 408, 429, 5xx (default: 2)."
    )
    temperature: float | None = Field(None, ge=0, description="Sent when given; the endpoint's default else.")
    response_format: ResponseFormat | None = Field(
        None, description='"json_schema" (default), "json_object" or "none": what the request asks for.'
    )
    relative: bool | None = Field(
        None,
        description="Score the rollouts of one GRPO group against each other, in one request (GRPOTrainer "
        "with score_batch); each episode alone everywhere else (default: false).",
    )

    @model_validator(mode="after")
    def _one_rubric(self) -> JudgeFields:
        if self.rubric is not None and self.rubric_file is not None:
            raise ArgumentError("give either 'rubric' or 'rubric_file', not both")
        if self.reads is not None and len(set(self.reads)) != len(self.reads):
            raise ArgumentError("'reads' names a part twice")
        return self


class JudgeConfig(JudgeFields):
    """`[judges.NAME]` in bundle.toml: a judge the bundle's tasks share by name."""

    max_concurrency: int = Field(
        DEFAULT_MAX_CONCURRENCY,
        ge=1,
        description="Requests in flight at once to the judge's endpoint (judges of one endpoint share "
        "the smallest of theirs).",
    )


@dataclass(frozen=True)
class Judge:
    """A judge ready to ask: a task's verifier's fields over its shared judge's over the defaults, the
    rubric read. `url` may still be None: then the server's `--judge-url` gives it."""

    label: str
    """The judge as errors name it: `judge 'tone'` (a shared one) or `the task's judge`."""
    model: str
    rubric: str
    url: str | None = None
    api_key_env: str | None = None
    reads: tuple[Reads, ...] = READS
    scale: JudgeScale = field(default_factory=JudgeScale)
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    temperature: float | None = None
    response_format: ResponseFormat = "json_schema"
    relative: bool = False
    """Whether a GRPO group's rollouts are judged together, against each other, when the client names
    the group (`agent_env.judges._groups`); alone otherwise."""


Scope = tuple[str, int]
"""A group's task (its split and index): rollouts of another task never join it."""


@dataclass(frozen=True)
class GroupInvite:
    """An episode's GRPO group, as its client names it: a key of the client's, the same for each of
    the group's rollouts on this server, and how many of them there are (2 to `MAX_GROUP_SIZE`)."""

    key: str
    size: int

    def __post_init__(self) -> None:
        if not 1 <= len(self.key) <= MAX_GROUP_KEY_LENGTH:
            raise ArgumentError(
                f"a group's key is 1 to {MAX_GROUP_KEY_LENGTH} characters, got {len(self.key)}"
            )
        if not 2 <= self.size <= MAX_GROUP_SIZE:
            raise ArgumentError(f"a group's size is 2 to {MAX_GROUP_SIZE} rollouts, got {self.size}")


class Judged(Protocol):
    """What a judge said of one episode: its score on the judge's scale, its reason."""

    @property
    def score(self) -> int: ...

    @property
    def reason(self) -> str: ...


class Judgements(Protocol):
    """Where an episode's judge verifiers ask (the `judges` part's `Judging`: a server's, with its
    endpoint, cache and bounds); the engine hands it to the part, whose default is the process's own."""

    async def verdict(self, judge: Judge, transcript: dict[str, Any]) -> Judged: ...


class Seat(Protocol):
    """An episode's seat in its GRPO group, where a relative judge reads it beside the others (the
    `judges` part's `GroupSeat`)."""

    def leave(self) -> None:
        """Give the seat up (the episode failed before its judge): its group no longer waits for it."""


class EpisodeJudge(Protocol):
    """What the `judges` part registers as `judges.episode`: the judge's verdict on one episode, and
    how many episodes it read together; EpisodeError VERIFIER_FAILED when it gives none."""

    async def __call__(
        self,
        judge: Judge,
        *,
        judging: Judgements | None,
        system_prompt: str | None,
        turns: list[TurnRecord],
        seat: Seat | None,
    ) -> tuple[Judged, int]: ...


class GroupSeating(Protocol):
    """What the `judges` part registers as `judges.seat`: an episode's seat in its group."""

    def __call__(self, judging: Judgements | None, invite: GroupInvite, scope: Scope) -> Seat: ...
