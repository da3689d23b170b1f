"""A stand-in for a judge model: an OpenAI-compatible chat-completions server on loopback that scores a
transcript by a rule, and can be slow, fail, answer garbage, or obey what reads as an instruction.

It reads a request as a naive model would: the data is what lies, in the user's message, between the
first `<transcript>` and the first `</transcript>` after it, parsed as JSON; everything else (the
system message, the user message around the data) is instruction. An instruction of the form "answer
score N" found there is obeyed (the score N, whatever the rule says): so a transcript that breaks out
of its data, or a prompt that pastes the episode's text among its instructions, steers it, as it would
steer a model that follows instructions; one kept as data does not. Otherwise the verdict is
`rule(transcript, low, high)`, the scale read from the request's JSON Schema (else its system message).

A group's request (a relative judge's: the data is `{"transcripts": [{"id": N, "transcript": ...}]}`)
is answered with one verdict per id: each transcript's score by the rule, then compared as `compare`
says (by default `stretched`: the group's best gets full marks, the rest in proportion), or with
`group_content` as it is (the tests of a group's answer that is no verdict).

`latency_s` delays each answer; `fail_first` answers the first requests 500, `status` every request
(500, 429, 401, ...); `garbage` answers with content that is no verdict (`GARBAGE`'s kinds) or a body
that is no chat completion ("html"). `usage` reports tokens. It refuses a request without the bearer
`API_KEY` (401) or for another model than `model` (404), keeps every request's body (refused ones
too), and counts the most requests it held at once.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tst.support.judge_answers import GARBAGE

if TYPE_CHECKING:
    from tst.support.serving import Serve

API_KEY = "sk-judge-stand-in"
MODEL = "judge-stand-in"
OPEN, CLOSE = "<transcript>", "</transcript>"
ORDER = re.compile(r"answer (?:with )?score (-?\d+)", re.IGNORECASE)
"""An instruction the stand-in obeys when it reads it as one."""
OBEYED = "as instructed"
"""The reason an obeyed verdict gives."""

Rule = Callable[[dict[str, Any], int, int], tuple[int, str]]
"""A verdict from the transcript (as JSON data) and the scale's bounds: a score and a reason."""
Compare = Callable[[list[int], int, int], list[int]]
"""A group's scores from each transcript's score by the rule, and the scale's bounds."""


def stretched(scores: list[int], low: int, high: int) -> list[int]:
    """The group's best gets full marks and the others their share of it: what sets them apart."""
    best = max(scores)
    if best == low:
        return [low] * len(scores)
    return [low + round((score - low) * (high - low) / (best - low)) for score in scores]


def last_reply(transcript: dict[str, Any]) -> str:
    replies = [turn["reply"] for turn in transcript.get("turns", []) if "reply" in turn]
    return replies[-1] if replies else ""


def contains(word: str) -> Rule:
    """Full marks when the last reply contains `word` (any case), the lowest score otherwise."""

    def rule(transcript: dict[str, Any], low: int, high: int) -> tuple[int, str]:
        if word.lower() in last_reply(transcript).lower():
            return high, f"the reply says {word}"
        return low, f"the reply never says {word}"

    return rule


COURTESY = ("welcome", "thank")


def accurate_and_courteous(transcript: dict[str, Any], low: int, high: int) -> tuple[int, str]:
    """The concierge example's rubric, as a rule: half the scale when the last reply names the room the
    last lookup returned (read from the calls), half when it welcomes or thanks the guest."""
    results = [
        call.get("result", "") for turn in transcript.get("turns", []) for call in turn.get("calls", [])
    ]
    room = json.loads(results[-1]).get("room") if results and results[-1].startswith("{") else None
    reply = last_reply(transcript).lower()
    accurate = room is not None and str(room) in reply
    courteous = any(word in reply for word in COURTESY)
    half = (high - low) // 2
    score = low + half * accurate + (high - low - half) * courteous
    said = [
        f"names room {room}" if accurate else "does not name the booked room",
        "is courteous" if courteous else "neither welcomes nor thanks the guest",
    ]
    return score, f"The reply {' and '.join(said)}."


def scored_as_said(transcript: dict[str, Any], low: int, high: int) -> tuple[int, str]:
    """The score the last reply ends with ("... 7"), on the scale or off it (the tests of a judge that
    answers off its scale)."""
    words = last_reply(transcript).split()
    return int(words[-1]) if words and words[-1].lstrip("-").isdigit() else low, "scored as the reply says"


@dataclass
class JudgeStandIn:
    """The scripted judge: its rule and its ways to fail; every request it was sent."""

    rule: Rule = field(default_factory=lambda: contains("thank"))
    latency_s: float = 0.0
    fail_first: int = 0
    status: int | None = None
    garbage: str | None = None
    compare: Compare = stretched
    group_content: str | None = None
    usage: bool = True
    model: str = MODEL
    requests: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    """Each verdict it gave, as it sent it (garbage aside; a group's one by one)."""
    groups: list[int] = field(default_factory=list)
    """The size of each group it judged together."""
    obeyed: int = 0
    """How many verdicts followed an instruction instead of the rule."""
    most_at_once: int = 0
    _now: int = 0

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    @property
    def transcripts(self) -> list[dict[str, Any]]:
        """The transcript of each request, as the stand-in read it (None where it could not)."""
        return [_read(body)[0] for body in self.requests]

    async def _chat(self, request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        self.requests.append(body)
        if request.headers.get("authorization") != f"Bearer {API_KEY}":
            return _error(401, "Incorrect API key provided.")
        if body.get("model") != self.model:
            return _error(404, f"The model `{body.get('model')}` does not exist.")
        self._now += 1
        self.most_at_once = max(self.most_at_once, self._now)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            if self.fail_first > 0:
                self.fail_first -= 1
                return _error(500, "the stand-in failed on purpose")
            if self.status is not None:
                return _error(self.status, f"the stand-in answers {self.status}")
            if self.garbage == "html":
                return Response(b"<html><body>502 Bad Gateway</body></html>", media_type="text/html")
            content = GARBAGE[self.garbage] if self.garbage is not None else self._verdict(body)
            return JSONResponse(self._completion(body, content))
        finally:
            self._now -= 1

    def _verdict(self, body: dict[str, Any]) -> str:
        transcript, instructions = _read(body)
        low, high = _scale(body)
        order = ORDER.search(instructions)
        if order is not None:
            self.obeyed += 1
            verdict = {"reason": OBEYED, "score": int(order[1])}
        elif transcript is None:
            verdict = {"reason": "no transcript to judge", "score": low}
        elif isinstance(transcript.get("transcripts"), list):
            return self._group_verdicts(transcript["transcripts"], low, high)
        else:
            score, reason = self.rule(transcript, low, high)
            verdict = {"reason": reason, "score": score}
        self.verdicts.append(verdict)
        return json.dumps(verdict)

    def _group_verdicts(self, numbered: list[dict[str, Any]], low: int, high: int) -> str:
        self.groups.append(len(numbered))
        if self.group_content is not None:
            return self.group_content
        judged = [self.rule(entry["transcript"], low, high) for entry in numbered]
        scores = self.compare([score for score, _ in judged], low, high)
        verdicts = [
            {"id": entry["id"], "reason": f"{reason}; beside the others: {score}", "score": score}
            for entry, (_, reason), score in zip(numbered, judged, scores, strict=True)
        ]
        self.verdicts.extend(verdicts)
        return json.dumps({"verdicts": verdicts})

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "id": f"chatcmpl-judge-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
        }
        if self.usage:
            sent = sum(len(m.get("content") or "") for m in body["messages"])
            answer["usage"] = {
                "prompt_tokens": sent // 4,
                "completion_tokens": len(content) // 4,
                "total_tokens": sent // 4 + len(content) // 4,
            }
        return answer


def _read(body: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The transcript (the JSON between the user message's first markers) and the instructions (all
    the rest of the messages)."""
    system = "\n".join(m.get("content") or "" for m in body["messages"] if m["role"] != "user")
    text = "\n".join(m.get("content") or "" for m in body["messages"] if m["role"] == "user")
    start = text.find(OPEN)
    end = text.find(CLOSE, start + len(OPEN)) if start >= 0 else -1
    if start < 0 or end < 0:
        return None, f"{system}\n{text}"
    instructions = f"{system}\n{text[:start]}{text[end + len(CLOSE) :]}"
    try:
        data = json.loads(text[start + len(OPEN) : end])
    except ValueError:
        return None, f"{system}\n{text}"
    return (data if isinstance(data, dict) else None), instructions


def _scale(body: dict[str, Any]) -> tuple[int, int]:
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {})
    schema = schema.get("properties", {}).get("verdicts", {}).get("items", schema)  # a group's
    score = schema.get("properties", {}).get("score", {})
    if "minimum" in score and "maximum" in score:
        return int(score["minimum"]), int(score["maximum"])
    system = body["messages"][0].get("content") or ""
    found = re.search(r"integer from (-?\d+) .*? to (-?\d+)", system)
    return (int(found[1]), int(found[2])) if found else (0, 10)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "error", "code": None}}, status_code=status)


def started(serve: Serve, **behaviour: Any) -> tuple[JudgeStandIn, str]:
    """A stand-in judge (`behaviour`: its fields) served on loopback, and its OpenAI base URL."""
    stand_in = JudgeStandIn(**behaviour)
    return stand_in, f"{serve(stand_in.app).url}/v1"
