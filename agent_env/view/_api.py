"""What the viewer's JSON API answers: the table's rows (filtered), one episode, and the filters.

`/api/episodes` lists every episode that passes the filters, newest first, with the choices each
filter offers (from every episode, so a filter never hides its own options) and the lines skipped
(line 0: a whole file left unread, such as a link or a FIFO); `/api/episodes/<id>` is one trajectory
as recorded. Values here are plain JSON, for the page alone, encoded by `encoded`: a number JSON
cannot hold, which a file may (`Infinity`, `-Infinity`, `NaN`: Python's json writes them), is
answered as that word, a string, since a browser refuses the whole answer over one of them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from agent_env._errors import AgentEnvError
from agent_env._trajectory import OutcomeRecord, Trajectory
from agent_env.view._folder import Listing, Recorded

OUTCOMES: tuple[str, ...] = get_args(OutcomeRecord.model_fields["kind"].annotation)
SKIPPED_SHOWN = 50
"""How many skipped lines a listing names (it counts them all)."""


class FilterError(AgentEnvError, ValueError):
    """A query the list cannot answer; the message says which filter and what it takes."""


@dataclass(frozen=True)
class Filters:
    """Which episodes the table shows: exact split, toolset and outcome; a task id containing `task`
    (any case); a score of at least `min_score` (an episode without a score never passes it)."""

    split: str | None = None
    task: str | None = None
    toolset: str | None = None
    outcome: str | None = None
    min_score: float | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]]) -> Filters:
        names = ("split", "task", "toolset", "outcome", "min_score")
        unknown = sorted(set(query) - set(names))
        if unknown:
            raise FilterError(f"unknown filter '{unknown[0]}' (filters: {', '.join(names)})")
        given = {name: values[-1] for name, values in query.items() if values and values[-1] != ""}
        outcome = given.get("outcome")
        if outcome is not None and outcome not in OUTCOMES:
            raise FilterError(f"outcome '{outcome}' is not one of {', '.join(OUTCOMES)}")
        min_score = None
        if "min_score" in given:
            try:
                min_score = float(given["min_score"])
            except ValueError:
                min_score = math.nan
            if math.isnan(min_score):
                raise FilterError(f"min_score takes a number, such as 0.5; got '{given['min_score']}'")
        return cls(given.get("split"), given.get("task"), given.get("toolset"), outcome, min_score)

    def admit(self, trajectory: Trajectory) -> bool:
        task = trajectory.task
        return (
            (self.split is None or task.split == self.split)
            and (self.task is None or self.task.casefold() in task.id.casefold())
            and (self.toolset is None or task.toolset == self.toolset)
            and (self.outcome is None or trajectory.outcome.kind == self.outcome)
            and (
                self.min_score is None
                or (trajectory.score is not None and trajectory.score >= self.min_score)
            )
        )


def row(recorded: Recorded) -> dict[str, Any]:
    """One line of the table."""
    t = recorded.trajectory
    return {
        "id": t.id,
        "task": t.task.id,
        "split": t.task.split,
        "index": t.task.index,
        "toolset": t.task.toolset,
        "outcome": t.outcome.kind,
        "code": t.outcome.code,
        "score": t.score,
        "tool_calls": t.tool_calls,
        "failures": t.tool_failures,
        "turns": len(t.turns),
        "client": t.client,
        "model": t.model,
        "recorded_by": t.recorded_by,
        "started_at": t.started_at,
        "total_s": t.timings.total_s,
        "file": recorded.file,
    }


def episodes(listing: Listing, filters: Filters, folder: str) -> dict[str, Any]:
    """The answer of `/api/episodes`."""
    every = listing.episodes
    shown = [r for r in every if filters.admit(r.trajectory)]
    # Newest first; episodes with no start time (eval may lack it) after, in the order read.
    shown.sort(key=lambda r: -(r.trajectory.started_at or -math.inf))
    return {
        "folder": folder,
        "total": len(every),
        "episodes": [row(r) for r in shown],
        "choices": {
            "split": sorted({r.trajectory.task.split for r in every}),
            "toolset": sorted({r.trajectory.task.toolset for r in every}),
            "outcome": list(OUTCOMES),
            "task": sorted({r.trajectory.task.id for r in every}),
        },
        "skipped": {
            "count": len(listing.skipped),
            "lines": [
                {"file": s.file, "line": s.line, "why": s.why} for s in listing.skipped[:SKIPPED_SHOWN]
            ],
        },
    }


def episode(recorded: Recorded) -> dict[str, Any]:
    """The answer of `/api/episodes/<id>`: the trajectory as recorded, with its file and counts."""
    t = recorded.trajectory
    return {
        "file": recorded.file,
        "tool_calls": t.tool_calls,
        "failures": t.tool_failures,
        # Its Python values (the schema holds JSON's types alone): pydantic's JSON mode makes some
        # non-finite numbers null and leaves others, where `encoded` names each one.
        "trajectory": t.model_dump(),
    }


def encoded(body: Any) -> bytes:
    """`body` as strict JSON (what a browser's `JSON.parse` takes), each non-finite number as its word."""
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False)
    except ValueError:  # rare, so only then is the whole answer walked
        text = json.dumps(_finite(body), ensure_ascii=False, allow_nan=False)
    return text.encode()


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value
