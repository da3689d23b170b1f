"""A stand-in for an OpenAI-compatible chat-completions server, on loopback, with scripted answers.

Each conversation is one sample of a task, told apart by its first user message (a task of `split`
first, else of another split); the n-th conversation of a task plays `plays[task_id][n]`: "solve"
(the bundle's reference play: its calls, then an `end_turn` with the turn's reply), "solve-in-text"
(the same, but the last turn's reply is plain text, not `end_turn`'s), "text" (a reply with no tool
call), "malformed" (a call whose arguments are not
JSON), or "unknown" (a call of a tool no task has, `UNKNOWN_TOOL`, at every answer); every request
for a task in `down` is answered 500, and every request for a task in `broken` is answered as its
value says (`BROKEN`: a 200 whose body trickles, is not JSON, is garbage, is not a chat completion,
or is 50 MB). Conversations are found again by their tool calls' ids.
`fail_first` answers the first requests 500 (retries); `api_key` (None: any) and `model` are what it
accepts (401 and 404 otherwise); `adapters` are served too, listed as vLLM lists LoRA adapters (the
model their `parent`), and play as the model does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agent_env._bundle.reader import Bundle
from agent_env._loading import load_bundle
from agent_env._replay import load_solutions
from agent_env._specs import Solution

API_KEY = "sk-stand-in"
MODEL = "stand-in"
GIVE_UP = "I cannot help with that."
UNKNOWN_TOOL = "open_hatch"
"""A tool no task of the example bundle has."""
TRICKLE_EVERY_S = 0.5
"""How often a "slow" answer sends its next byte: more often than a read timeout of a second would
notice, so that only a deadline on the whole answer ends it."""
NOT_JSON = b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "mess'
GARBAGE = b"<html><body><h1>502 Bad Gateway</h1>nginx</body></html>"
NOT_A_COMPLETION = b'{"object": "list", "data": [{"id": "stand-in", "object": "model"}]}'
HUGE_BYTES = 50 * 1024 * 1024
BROKEN = ("slow", "not-json", "garbage", "not-a-completion", "huge")


@dataclass
class ChatStandIn:
    """The scripted server's state: who is which sample, and every chat request it answered."""

    bundle: Bundle
    split: str
    plays: Mapping[str, Sequence[str]]
    down: frozenset[str] = frozenset()
    broken: Mapping[str, str] = field(default_factory=dict)
    fail_first: int = 0
    api_key: str | None = API_KEY
    model: str = MODEL
    adapters: Sequence[str] = ()
    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _started: dict[str, int] = field(default_factory=dict)
    _conversations: dict[str, tuple[str, str]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
            ]
        )

    def _refused(self, request: Request) -> JSONResponse | None:
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        return None

    async def _models(self, request: Request) -> JSONResponse:
        if refused := self._refused(request):
            return refused
        adapters = [{"id": name, "object": "model", "parent": self.model} for name in self.adapters]
        return JSONResponse(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "x"}, *adapters]}
        )

    async def _chat(self, request: Request) -> Response:
        if refused := self._refused(request):
            return refused
        body = await request.json()
        if body.get("model") not in (self.model, *self.adapters):
            return _error(404, f"The model `{body.get('model')}` does not exist.", "model_not_found")
        with self._lock:
            self.requests.append(body)
            if self.fail_first > 0:
                self.fail_first -= 1
                return _error(500, "the stand-in failed on purpose", "server_error")
            if self._task_of(body["messages"]) in self.down:
                return _error(500, "the stand-in is down for this task", "server_error")
            if how := self.broken.get(self._task_of(body["messages"])):
                return _broken(how)
            conversation, task_id, play = self._which(body["messages"])
            call_id = f"call-{conversation}-{next(self._ids)}"
        return JSONResponse(_completion(self.model, self._answer(task_id, play, body["messages"], call_id)))

    def _task_of(self, messages: list[dict[str, Any]]) -> str:
        first = next(m["content"] for m in messages if m["role"] == "user")
        splits = [self.split, *(split for split in self.bundle.splits if split != self.split)]
        return next(t.id for split in splits for t in self.bundle.tasks(split) if t.turns[0] == first)

    def _which(self, messages: list[dict[str, Any]]) -> tuple[str, str, str]:
        for message in messages:
            for call in message.get("tool_calls") or []:
                conversation = call["id"].split("-")[1]
                return conversation, *self._conversations[conversation]
        task_id = self._task_of(messages)
        if any(m["role"] == "assistant" for m in messages):
            return "none", task_id, "text"  # a conversation that gave up keeps giving up
        nth = self._started.get(task_id, 0)
        self._started[task_id] = nth + 1
        plays = self.plays.get(task_id, ())
        play = plays[nth] if nth < len(plays) else "text"
        conversation = str(len(self._conversations))
        self._conversations[conversation] = (task_id, play)
        return conversation, task_id, play

    def _answer(
        self, task_id: str, play: str, messages: list[dict[str, Any]], call_id: str
    ) -> dict[str, Any]:
        if play == "text":
            return {"role": "assistant", "content": GIVE_UP}
        if play == "malformed":
            return _calling(call_id, "list_crates", '{"bay": 4,', content="Let me look.")
        if play == "unknown":
            return _calling(call_id, UNKNOWN_TOOL, "{}", content="Opening it.")
        split = next(split for split in self.bundle.splits if task_id in load_solutions(self.bundle, split))
        script: Solution = load_solutions(self.bundle, split)[task_id]
        # A turn opens with a user message, or with the answer to an end_turn call (the next prompt).
        ending = {
            c["id"]
            for m in messages
            for c in m.get("tool_calls") or []
            if c["function"]["name"] == "end_turn"
        }
        opened = [i for i, m in enumerate(messages) if m["role"] == "user" or m.get("tool_call_id") in ending]
        turn = len(opened)
        since = messages[opened[-1] :]
        made = sum(len(m.get("tool_calls") or []) for m in since if m["role"] == "assistant")
        scripted = script.turns[turn - 1]
        if made < len(scripted.all_calls):
            call = scripted.all_calls[made]
            return _calling(call_id, call.tool, json.dumps(call.arguments))
        if turn == len(script.turns) and play == "solve-in-text":
            return {"role": "assistant", "content": scripted.reply}
        return _calling(call_id, "end_turn", json.dumps({"reply": scripted.reply}))


def _calling(call_id: str, name: str, arguments: str, *, content: str | None = None) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": content, "tool_calls": [call]}


def _completion(model: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stand-in",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
    }


def _broken(how: str) -> Response:
    """A 200 that is no chat completion, as `how` (one of `BROKEN`) says."""
    if how == "slow":
        # Headers that promise a large body, then a byte every TRICKLE_EVERY_S (for a minute at most).
        headers = {"content-length": "1000000"}
        return StreamingResponse(_trickle(), media_type="application/json", headers=headers)
    if how == "huge":
        return StreamingResponse(_huge(), media_type="application/json")
    if how == "garbage":
        return Response(GARBAGE, media_type="text/html", status_code=200)
    bodies = {"not-json": NOT_JSON, "not-a-completion": NOT_A_COMPLETION}
    return Response(bodies[how], media_type="application/json")


async def _trickle() -> AsyncIterator[bytes]:
    yield b"{"
    for _ in range(120):
        await asyncio.sleep(TRICKLE_EVERY_S)
        yield b" "


async def _huge() -> AsyncIterator[bytes]:
    chunk = 1024 * 1024
    yield b'{"id": "' + b"x" * (chunk - 8)
    for _ in range(HUGE_BYTES // chunk - 1):
        yield b"x" * chunk


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "error", "code": code}}, status_code=status)


def eval_ids() -> list[str]:
    """The example bundle's eval tasks' ids, by index."""
    from tst.support.wharf import WHARF

    return [task.id for task in load_bundle(WHARF).tasks("eval")]


def start_stand_in(
    serve: Callable[[Any], Any], plays: Mapping[str, Sequence[str]] | None = None, **options: Any
) -> tuple[ChatStandIn, str]:
    """A stand-in for the example bundle's eval split, served by the `serve` fixture; it and its `/v1` URL."""
    from tst.support.wharf import WHARF

    scripted = ChatStandIn(load_bundle(WHARF), "eval", plays or {}, **options)
    return scripted, f"{serve(scripted.app).url}/v1"
