"""What happens in an episode, as it happens: the events an `Episode` emits, and how it ended.

An episode is the one owner of its lifecycle: the server's session, its tracker and the fakes read
its state and observe these events rather than keeping their own copies. Each event carries its
wall-clock time and everything it carried (the prompt, a tool's arguments and answer, a reply, a
score), in order, so that an episode's events are its trajectory.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal


@dataclass(frozen=True, kw_only=True)
class EpisodeEvent:
    """Something that happened in an episode; `kind` names it on the wire and in a trajectory."""

    kind: ClassVar[str]
    at: float = field(default_factory=time.time)
    """When it happened, in seconds since the epoch."""

    def as_dict(self) -> dict[str, Any]:
        """The event as JSON-ready data, `kind` first."""
        return {"kind": self.kind, **dataclasses.asdict(self)}


@dataclass(frozen=True, kw_only=True)
class Deployed(EpisodeEvent):
    """The envs and the sandbox were made and the first turn opened."""

    kind: ClassVar[str] = "deployed"
    prompt: Sequence[Mapping[str, str]]
    """The chat messages that open the task: the system prompt, if any, and the first turn."""
    tools: Sequence[Mapping[str, Any]]
    seconds: float


@dataclass(frozen=True, kw_only=True)
class _ToolEvent(EpisodeEvent):
    turn: int
    tool: str


@dataclass(frozen=True, kw_only=True)
class ToolCalled(_ToolEvent):
    """The played agent called a tool in an open turn (the call may yet fail)."""

    kind: ClassVar[str] = "tool_called"
    arguments: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolAnswered(_ToolEvent):
    """A tool call's answer: the tool's result, or the error the agent is shown instead."""

    kind: ClassVar[str] = "tool_answered"
    result: str | None = None
    error_code: str | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class TurnEnded(EpisodeEvent):
    """The agent's reply ended a turn; `prompt` opens the next one, None after the last."""

    kind: ClassVar[str] = "turn_ended"
    turn: int
    reply: str
    prompt: str | None = None


@dataclass(frozen=True, kw_only=True)
class Scored(EpisodeEvent):
    """The verifiers scored the episode."""

    kind: ClassVar[str] = "scored"
    score: float
    verifier_scores: tuple[float, ...]
    components: tuple[Mapping[str, float], ...] = ()
    """Each verifier's named rewards, in the task's order (empty for a verifier without any)."""
    details: tuple[str, ...] = ()
    """What each verifier said beside its score, in the task's order ("" for one that said nothing;
    empty when none did)."""


@dataclass(frozen=True, kw_only=True)
class Failed(EpisodeEvent):
    """The episode ended with an error: a deploy or verifier that failed, a missed deadline, ..."""

    kind: ClassVar[str] = "failed"
    code: str
    message: str


@dataclass(frozen=True, kw_only=True)
class TornDown(EpisodeEvent):
    """Everything the episode made is released; the last event of every episode."""

    kind: ClassVar[str] = "torn_down"
    outcome: str
    seconds: float = 0.0
    """How long the teardown took."""


Listener = Callable[[EpisodeEvent], None]
"""Called with each event as it is emitted, on the episode's event loop; it must not block."""


@dataclass(frozen=True)
class EpisodeOutcome:
    """How an episode ended, as `Episode.outcome` holds it; the first ending counts. A trajectory
    keeps it as an `OutcomeRecord`."""

    kind: Literal["scored", "failed", "abandoned"]
    score: float | None = None
    code: str | None = None
    reason: str = ""
    """The error's message (failed), or why the episode was given up (abandoned)."""
    at: float = field(default_factory=time.time)

    def __str__(self) -> str:
        if self.kind == "scored":
            return f"scored {self.score:g}"
        if self.kind == "failed":
            return f"failed {self.code}: {self.reason}"
        return f"abandoned: {self.reason}" if self.reason else "abandoned"
