"""A judge as files declare it (pydantic alone): `[judges.NAME]` in bundle.toml, a task's `judge`
verifier's own fields, and `Judge`, the two merged at load with the rubric read: what a judgement asks.

A task's verifier names a shared judge (`"judge": NAME`) and may override any of its fields, or gives
every field itself. The endpoint is any OpenAI-compatible chat-completions API; its key is read from
the environment variable `api_key_env` names, never from a file. The server's own settings
(`agent_env.judges._judging.Judging`: `--judge-url`, `--judge-model`) override the endpoint and the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_env._errors import ArgumentError

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
