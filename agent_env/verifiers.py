"""Verifiers: turn a finished episode into a score in [0, 1].

Built-ins compare an env's items (`items`), run a command in the agent's sandbox (`bash`), or check
the final reply (`reply`); a bundle's own Python function (`function`) does anything else. A task's
score aggregates its verifiers: a weighted mean, or all-pass (1 only when every verifier gives 1).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_env._threads import call_maybe_async
from agent_env.errors import EpisodeError, ErrorCode
from agent_env.sandbox.base import CommandResult, Sandbox
from agent_env.tools import Tool

if TYPE_CHECKING:
    from agent_env.env import Env
    from agent_env.events import EpisodeEvent
    from agent_env.mcp.env import McpEnv
    from agent_env.task import Task
    from agent_env.trajectory import TurnRecord

EnvInstance: TypeAlias = "Env | McpEnv"
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
            raise ValueError("give exactly one of 'equals', 'contains' or 'matches'")
        if self.matches is not None:
            try:
                re.compile(self.matches)
            except re.error as exc:
                raise ValueError(f"'matches' is not a valid regular expression: {exc}") from exc
        return self


class FunctionCheck(_Check):
    """A function of the bundle's `verifiers.py`, called as `function(context, **args)`."""

    type: Literal["function"]
    function: str
    args: dict[str, Any] = Field(default_factory=dict)


VerifierSpec = Annotated[ItemsCheck | BashCheck | ReplyCheck | FunctionCheck, Field(discriminator="type")]
"""A verifier as a task file writes it, told apart by its `type`."""

VERIFIER_TYPES: tuple[str, ...] = tuple(
    tag
    for check in get_args(get_args(VerifierSpec)[0])
    for tag in get_args(check.model_fields["type"].annotation)
)
"""Every verifier `type` a task may name, from the checks themselves: `items`, `bash`, `reply`, `function`."""

VerifierFunction = Callable[..., Any]
"""A bundle's verifier: `(context: VerifierContext, **args) -> float | bool`, sync or async."""


@dataclass(frozen=True)
class VerifierContext:
    """What a verifier sees of a finished episode (and a simulated user of one under way)."""

    task: Task
    envs: Mapping[str, EnvInstance]
    """Each env of the episode by name: a Python env's instance, or an MCP env's `McpEnv`, whose
    tools `call` (from a sync function) and `acall` (from an async one) return their values."""
    replies: tuple[str, ...]
    sandbox: Sandbox | None = None
    events: Sequence[EpisodeEvent] = ()
    """What happened in the episode until its last turn ended, in order (`agent_env.events`)."""

    @property
    def reply(self) -> str:
        """The reply that ended the last turn."""
        return self.replies[-1] if self.replies else ""

    @property
    def turns(self) -> list[TurnRecord]:
        """The conversation so far, turn by turn: each turn's user message, its tool calls with their
        results, and the reply that ended it (as a trajectory records them)."""
        from agent_env.trajectory import turn_records

        turns = turn_records(self.events, self.task.turns)
        # A simulated user is asked before the event that ends the turn, which carries its answer.
        if turns and turns[-1].reply is None and len(self.replies) >= turns[-1].turn:
            turns[-1].reply = self.replies[turns[-1].turn - 1]
        return turns

    async def items(self, check: ItemsCheck) -> Any:
        """What an `items` verifier compares: the env's `items()`, or what its `tool` returns (a Python
        env's tool was checked at load; an MCP env's is its server's to know)."""
        from agent_env.env import Env

        env = self.envs[check.env]
        if isinstance(env, Env):
            if check.tool is None:
                return await call_maybe_async(env.items)
            spec = next(e for e in self.task.toolset.envs if e.name == check.env)
            tool = spec.tool(check.tool)
            assert isinstance(tool, Tool), "load_bundle checks the items verifier's tool"
            return await tool.invoke(env, check.arguments)
        assert check.tool is not None, "load_bundle gives an MCP env's items verifier a tool"
        return await env.acall(check.tool, check.arguments)

    async def bash(self, command: str, timeout_s: float = 30.0) -> CommandResult:
        """Run a command in the agent's sandbox, as the `bash` verifier does."""
        if self.sandbox is None:
            raise EpisodeError(
                ErrorCode.VERIFIER_FAILED, f"task '{self.task.id}' has no sandbox to run bash in"
            )
        limit = self.task.sandbox_settings.max_output_bytes
        return await self.sandbox.run(command, timeout_s=timeout_s, max_output_bytes=limit)


@dataclass(frozen=True)
class Verifier:
    """A verifier of a task, ready to score: its spec and, for `function`, the function itself."""

    spec: ItemsCheck | BashCheck | ReplyCheck | FunctionCheck
    function: VerifierFunction | None = field(default=None, repr=False)

    async def score(self, context: VerifierContext) -> float:
        """The score in [0, 1]; a verifier that cannot score raises EpisodeError VERIFIER_FAILED."""
        spec = self.spec
        if isinstance(spec, ItemsCheck):
            return score_items(spec, await context.items(spec))
        if isinstance(spec, BashCheck):
            result = await context.bash(spec.command, spec.timeout_s)
            return 1.0 if result.ok else 0.0
        if isinstance(spec, ReplyCheck):
            return score_reply(spec, context.reply)
        assert self.function is not None
        value = await call_maybe_async(self.function, context, **spec.args)
        return _as_score(spec.function, value)


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
