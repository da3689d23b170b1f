"""Verifiers: turn a finished episode into a score in [0, 1].

Built-ins compare an env's items (`items`), run a command in the agent's sandbox (`bash`), check
the final reply (`reply`), or ask a chat model to score the episode against a rubric (`judge`,
`agent_env.judges`); a bundle's own Python function (`function`) does anything else. A task's
score aggregates its verifiers: a weighted mean, or all-pass (1 only when every verifier gives 1).
"""

from __future__ import annotations

import json
import re
import traceback
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_env._contracts.judges import Judge, JudgeFields, Judgements, Seat
from agent_env._contracts.registry import judge_episode
from agent_env._contracts.sandbox import CommandResult
from agent_env._error_types import EpisodeError, ErrorCode
from agent_env._errors import ArgumentError
from agent_env._output_tail import output_tail
from agent_env._threads import call_maybe_async

if TYPE_CHECKING:
    from agent_env._contracts.mcp import ServerEnv
    from agent_env._env import Env
    from agent_env._trajectory import TurnRecord

EnvInstance: TypeAlias = "Env | ServerEnv"
"""One episode's env: an instance of a Python env's class, or a session with an MCP env's server."""


class _Check(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: float = Field(1.0, ge=0, description="Weight in the task's mean score.")


class ItemsCheck(_Check):
    """An env's items equal (`exact`) or include (`includes`) the expected ones, in any order: what its
    `items()` returns, or what one of its tools returns (`tool`, with `arguments`; an MCP env's way)."""

    type: Literal["items"]
    env: str
    tool: str | None = Field(None, description="The env's tool that returns the items, instead of items().")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")
    expected: list[Any]
    match: Literal["exact", "includes"] = "exact"
    partial: bool = Field(False, description="Score the share of expected items found instead of 0 or 1.")


class BashCheck(_Check):
    """A command succeeds (exit code 0) in the agent's sandbox after the last turn."""

    type: Literal["bash"]
    command: str = Field(min_length=1)
    timeout_s: float = Field(30.0, gt=0)


class ReplyCheck(_Check):
    """The final reply equals, contains or matches (a regular expression, searched) a text."""

    type: Literal["reply"]
    equals: str | None = None
    contains: str | None = None
    matches: str | None = None
    ignore_case: bool = False

    @model_validator(mode="after")
    def _exactly_one_test(self) -> ReplyCheck:
        given = [name for name in ("equals", "contains", "matches") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ArgumentError("give exactly one of 'equals', 'contains' or 'matches'")
        if self.matches is not None:
            try:
                re.compile(self.matches)
            except re.error as exc:
                raise ArgumentError(f"'matches' is not a valid regular expression: {exc}") from exc
        return self


class FunctionCheck(_Check):
    """A function of the bundle's `verifiers.py`, called as `function(context, **args)`."""

    type: Literal["function"]
    function: str
    args: dict[str, Any] = Field(default_factory=dict)


class JudgeCheck(_Check, JudgeFields):
    """A chat model scores the episode against a rubric (`agent_env.judges`): a judge the bundle shares
    (`judge`, a `[judges.NAME]` of bundle.toml), its fields overridden by any given here, or one of
    the task's own (then `model` and a rubric are needed here)."""

    type: Literal["judge"]
    judge: str | None = Field(None, min_length=1, description="A judge of bundle.toml's [judges.NAME].")


class ScriptCheck(_Check):
    """A task's own test script, run in its sandbox after the last turn: what it writes is the score
    (a Harbor task's tests/test.sh). Made by the loader of such tasks, never written in a task file."""

    type: Literal["test_script"]
    script: str = Field(min_length=1, description="Where the script runs from in the sandbox.")
    timeout_s: float = Field(gt=0)


VerifierSpec = Annotated[
    ItemsCheck | BashCheck | ReplyCheck | FunctionCheck | JudgeCheck, Field(discriminator="type")
]
"""A verifier as a task file writes it, told apart by its `type`."""

VERIFIER_TYPES: tuple[str, ...] = tuple(
    tag
    for check in get_args(get_args(VerifierSpec)[0])
    for tag in get_args(check.model_fields["type"].annotation)
)
"""Every verifier `type` a task may name, from the checks themselves: `items`, `bash`, `reply`, `function`,
`judge`."""

VerifierFunction = Callable[..., Any]
"""A bundle's verifier: `(context: VerifierContext, **args) -> float | bool`, sync or async."""


class ScoringContext(Protocol):
    """What a verifier scores with (`agent_env._contexts.VerifierContext` is the episode's): typed here so
    that the verifiers, which a Task holds, do not import the context, which holds the Task."""

    @property
    def reply(self) -> str: ...

    async def items(self, check: ItemsCheck) -> Any: ...

    async def bash(self, command: str, timeout_s: float = ...) -> CommandResult: ...

    @property
    def system_prompt(self) -> str | None: ...

    @property
    def turns(self) -> list[TurnRecord]: ...

    @property
    def judging(self) -> Judgements | None: ...

    @property
    def group_seat(self) -> Seat | None: ...


@dataclass(frozen=True)
class Judgement:
    """A verifier's score and, when it names rewards of its own (a Harbor task's reward.json), each
    of them: what a trajectory records as the verifier's components; with `detail`, what it said
    beside its score, for a person to read why."""

    score: float
    components: Mapping[str, float] = field(default_factory=dict)
    detail: str = ""
    """The verifier's own words on its score, short and bounded: the end of a test script's or a
    `bash` check's output (`agent_env._output_tail`); "" when it said nothing. A trajectory records
    it as the verifier's `detail`."""


@dataclass(frozen=True)
class Verifier:
    """A verifier of a task, ready to score: its spec and, for `function` and `test_script`, the
    function that scores (a test script's returns a `Judgement`); for `judge`, the judge it asks
    (its fields merged with its shared judge's, the rubric read)."""

    spec: ItemsCheck | BashCheck | ReplyCheck | FunctionCheck | JudgeCheck | ScriptCheck
    function: VerifierFunction | None = field(default=None, repr=False)
    judged_by: Judge | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """What a person reads it as: a function verifier's function (`check_answer`), which tells two
        apart where "function" would not; any other, its type."""
        return self.spec.function if isinstance(self.spec, FunctionCheck) else self.spec.type

    @property
    def runs_commands(self) -> bool:
        """Whether it may run commands in the sandbox: `bash` and a test script do, and a function may
        (through its context's `bash`)."""
        return isinstance(self.spec, BashCheck | ScriptCheck | FunctionCheck)

    def where_it_raised(self, error: BaseException) -> str:
        """The verifier as its author finds it: `function 'name' (verifiers.py:LINE)`, the line of its
        file that raised (or its `def`'s), or its type and what it reads for the other checks."""
        spec = self.spec
        if isinstance(spec, ItemsCheck):
            return f"items of env '{spec.env}'" + (f" by its tool '{spec.tool}'" if spec.tool else "")
        if not isinstance(spec, FunctionCheck) or self.function is None:
            return spec.type
        code = getattr(self.function, "__code__", None)
        if code is None:
            return f"function '{spec.function}'"
        raised = [
            frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == code.co_filename
        ]
        line = raised[-1].lineno if raised else code.co_firstlineno
        return f"function '{spec.function}' ({Path(code.co_filename).name}:{line})"

    async def score(self, context: ScoringContext) -> float:
        """The score in [0, 1]; a verifier that cannot score raises EpisodeError VERIFIER_FAILED."""
        return (await self.judge(context)).score

    async def judge(self, context: ScoringContext) -> Judgement:
        """The score with its named components and what the verifier said, if any (a `bash` check: its
        command's output tail, with its exit code when it failed); raises as `score` does."""
        if isinstance(self.spec, ScriptCheck):
            assert self.function is not None
            judged = await call_maybe_async(self.function, context)
            assert isinstance(judged, Judgement)
            return judged
        if isinstance(self.spec, BashCheck):
            result = await context.bash(self.spec.command, self.spec.timeout_s)
            said = result.output
            if not result.ok:  # below its output, how it ended: its exit code, or that it was killed
                said = replace(result, output=said.rstrip()).render(self.spec.timeout_s)
            return Judgement(1.0 if result.ok else 0.0, detail=output_tail(said))
        if isinstance(self.spec, JudgeCheck):
            return await self._judged(context)
        return Judgement(await self._score(context))

    async def _judged(self, context: ScoringContext) -> Judgement:
        """The judge's verdict: its score normalised, its raw score the component `judge_score`, its
        reason the detail; a judge that gives none leaves the episode unscorable (VERIFIER_FAILED)."""
        judge = self.judged_by
        assert judge is not None, "load_bundle resolves a judge verifier's judge"
        verdict, together = await judge_episode(
            judge,
            judging=context.judging,
            system_prompt=context.system_prompt,
            turns=context.turns,
            seat=context.group_seat if judge.relative else None,
        )
        components = {JUDGE_SCORE: float(verdict.score)}
        if together > 1:
            components[JUDGE_GROUP] = float(together)
        return Judgement(judge.scale.normalised(verdict.score), components=components, detail=verdict.reason)

    async def _score(self, context: ScoringContext) -> float:
        spec = self.spec
        if isinstance(spec, ItemsCheck):
            return score_items(spec, await context.items(spec))
        if isinstance(spec, ReplyCheck):
            return score_reply(spec, context.reply)
        assert self.function is not None and isinstance(spec, FunctionCheck)
        value = await call_maybe_async(self.function, context, **spec.args)
        return _as_score(spec.function, value)


JUDGE_SCORE = "judge_score"
"""The component a judge verifier records: the judge's own score, on its scale."""
JUDGE_GROUP = "judge_group"
"""The component a relative judge records when it scored the episode beside its GRPO group: how many
rollouts it read together."""


def score_items(spec: ItemsCheck, actual: Any) -> float:
    """Compare items as multisets of their canonical JSON, so order never matters."""
    if not isinstance(actual, Sequence) or isinstance(actual, str | bytes):
        raise EpisodeError(
            ErrorCode.VERIFIER_FAILED,
            f"env '{spec.env}' items() returned {type(actual).__name__}, not a list",
        )
    expected = Counter(map(_canonical, spec.expected))
    found = Counter(map(_canonical, actual))
    matched = sum((expected & found).values())
    if spec.match == "exact":
        total = max(sum(expected.values()), sum(found.values()))
        complete = expected == found
    else:
        total = sum(expected.values())
        complete = matched == total
    if not spec.partial:
        return 1.0 if complete else 0.0
    return 1.0 if total == 0 else matched / total


def score_reply(spec: ReplyCheck, reply: str) -> float:
    flags = re.IGNORECASE if spec.ignore_case else 0
    text = reply.strip()
    if spec.matches is not None:
        return 1.0 if re.search(spec.matches, text, flags) else 0.0
    wanted = (spec.equals if spec.equals is not None else spec.contains) or ""
    if spec.ignore_case:
        text, wanted = text.casefold(), wanted.strip().casefold()
    else:
        wanted = wanted.strip()
    ok = text == wanted if spec.equals is not None else wanted in text
    return 1.0 if ok else 0.0


def aggregate(scored: Sequence[tuple[float, float]], mode: Literal["mean", "all_pass"]) -> float:
    """A task's score from its verifiers' (score, weight) pairs."""
    if mode == "all_pass":
        return 1.0 if all(score == 1.0 for score, _ in scored) else 0.0
    total = sum(weight for _, weight in scored)
    if total == 0:
        return 0.0
    return sum(score * weight for score, weight in scored) / total


def _canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)


def _as_score(name: str, value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and 0.0 <= float(value) <= 1.0:
        return float(value)
    raise EpisodeError(
        ErrorCode.VERIFIER_FAILED,
        f"verifier function '{name}' returned {value!r}; return a number in [0, 1] or a bool",
    )


def verifier_place(index: int) -> str:
    """How every message numbers a task's verifier: `verifiers[INDEX]`, counted from 0, as the task's
    `verifiers` list is written; `agent-env check`'s problems, an episode's errors, and `agent-env
    replay`'s and `play`'s scores all say it so, and a person finds it in the task's line."""
    return f"verifiers[{index}]"


def verifier_labels(verifiers: Sequence[Verifier]) -> list[str]:
    """Each verifier of a task as a score or what it said is headed: its place and its name
    (`verifiers[1] (check_answer)`), in the task's order."""
    return [f"{verifier_place(n)} ({verifier.name})" for n, verifier in enumerate(verifiers)]
