"""A judge's answer read strictly: one JSON object, `{"reason": TEXT, "score": INTEGER}`, nothing more
(a group's: `{"verdicts": [...]}`, one such verdict with its transcript's `id` for each transcript).

No text around it, no second key of a name, no other key, a score that is an integer on the judge's
scale: anything else is no verdict (`VerdictError`), and the episode is unscorable rather than scored
by a guess at what the judge meant.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from agent_env._contracts.judges import JudgeScale
from agent_env._errors import AgentEnvError

MAX_REASON_CHARS = 2000
"""The most of a judge's reason a trajectory keeps (its `detail`)."""
EXCERPT_CHARS = 120
"""How much of an unreadable answer its error quotes."""


@dataclass(frozen=True)
class Verdict:
    """A judge's score on its scale, and its reason."""

    score: int
    reason: str


class VerdictError(AgentEnvError):
    """The judge's answer is no verdict: `kind` is "unreadable" (not the JSON object asked for) or
    "off_scale" (a score outside the judge's scale)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def read_verdict(content: str | None, scale: JudgeScale) -> Verdict:
    """The verdict `content` holds, or VerdictError saying what is wrong with it."""
    return _verdict_of(_object_of(content), scale)


def read_verdicts(content: str | None, scale: JudgeScale, count: int) -> list[Verdict]:
    """The `count` verdicts of a group's answer, `{"verdicts": [{"id": N, "reason": ..., "score": N},
    ...]}`, in the order of their ids (1 to `count`, each once); VerdictError if it is not exactly that."""
    data = _object_of(content)
    text = content or ""
    if set(data) != {"verdicts"}:
        said = _keys_said(data, {"verdicts"})
        raise VerdictError("unreadable", f'answered {said}; a group\'s answer is {{"verdicts": [...]}} alone')
    entries = data["verdicts"]
    if not isinstance(entries, list) or len(entries) != count:
        what = f"{len(entries)} verdicts" if isinstance(entries, list) else type(entries).__name__
        raise VerdictError("unreadable", f"answered {what} for {count} transcripts: {_excerpt(text)}")
    by_id: dict[int, Verdict] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "id" not in entry:
            raise VerdictError("unreadable", f"answered a verdict without an id: {_excerpt(text)}")
        number = _integer(entry["id"])
        if number is None or not 1 <= number <= count:
            given = json.dumps(entry["id"])
            raise VerdictError("unreadable", f"answered the id {given}, not one of 1 to {count}")
        if number in by_id:
            raise VerdictError("unreadable", f"answered two verdicts for transcript {number}")
        fields = {key: value for key, value in entry.items() if key != "id"}
        by_id[number] = _verdict_of(fields, scale, f"for transcript {number} ")
    return [by_id[number] for number in range(1, count + 1)]


def _object_of(content: str | None) -> dict[str, Any]:
    """The one JSON object `content` is, read strictly; VerdictError if it is not one."""
    if content is None or not content.strip():
        raise VerdictError("unreadable", "answered no text")
    try:
        data = json.loads(content, object_pairs_hook=_no_repeats, parse_constant=_no_constants)
    except (json.JSONDecodeError, _NotStrictError) as exc:
        raise VerdictError("unreadable", f"answered no JSON object ({exc}): {_excerpt(content)}") from None
    if not isinstance(data, dict):
        raise VerdictError(
            "unreadable", f"answered {type(data).__name__}, not a JSON object: {_excerpt(content)}"
        )
    return data


def _verdict_of(data: dict[str, Any], scale: JudgeScale, which: str = "") -> Verdict:
    """The verdict `data` is, exactly a reason and a score on the scale; `which` names it in a group."""
    if set(data) != {"reason", "score"}:
        said = _keys_said(data, {"reason", "score"})
        alone = '{"reason": ..., "score": N} alone'
        raise VerdictError("unreadable", f"answered {which}{said}; a verdict is {alone}")
    reason, score = data["reason"], data["score"]
    if not isinstance(reason, str):
        kind = type(reason).__name__
        raise VerdictError("unreadable", f"answered {which}a reason that is {kind}, not text")
    number = _integer(score)
    if number is None:
        raise VerdictError("unreadable", f"answered {which}the score {json.dumps(score)}, not an integer")
    if not scale.min <= number <= scale.max:
        raise VerdictError(
            "off_scale", f"answered {which}the score {number}, off its scale of {scale.min} to {scale.max}"
        )
    return Verdict(number, _bounded(reason.strip()))


def _keys_said(data: dict[str, Any], wanted: set[str]) -> str:
    """What keys `data` lacks of `wanted` and has beyond them, in words."""
    missing = sorted(wanted - set(data))
    extra = sorted(set(data) - wanted)
    return ", ".join([*(f"no '{k}'" for k in missing), *(f"'{k}' too" for k in extra)])


def _integer(value: Any) -> int | None:
    """An integer score; a float that is one (7.0) too, as JSON does not tell them apart."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


class _NotStrictError(AgentEnvError, ValueError):
    """JSON that Python's parser takes but JSON does not, or a key given twice."""


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise _NotStrictError(f"the key {', '.join(map(repr, repeated))} twice")
    return dict(pairs)


def _no_constants(name: str) -> Any:
    raise _NotStrictError(f"{name} is not JSON")


def _bounded(reason: str) -> str:
    if len(reason) <= MAX_REASON_CHARS:
        return reason
    return f"{reason[:MAX_REASON_CHARS]} [... cut]"


def _excerpt(content: str) -> str:
    more = " ..." if len(content) > EXCERPT_CHARS else ""
    return f"{content[:EXCERPT_CHARS]!r}{more}"
