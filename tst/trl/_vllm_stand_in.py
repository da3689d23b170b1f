"""A stand-in for vLLM's OpenAI-compatible server, serving only what AsyncGRPO's rollout worker calls.

TRL 1.16's `AsyncRolloutWorker` posts `/v1/completions` with the whole conversation as token ids
(`prompt`) and `return_token_ids`, and reads back `choices[0].token_ids` and
`choices[0].logprobs.token_logprobs`. Here a script decides each completion from the decoded
conversation, as a model that calls tools would; the reply carries the script's text as token ids of
the worker's own tokenizer. No GPU and no vLLM are needed: nothing else of vLLM is stood in for.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tst.support.waiting import until

HOLD_S = 60.0
"""The longest the first requests are held together; past it they go on, and the test sees why."""
STAND_IN_LOGPROB = -0.25


class StandInVLLM:
    """`/v1/completions` from a script; optionally holds the first `hold` requests until they are all
    in and `ready()` holds, so a test knows that many rollouts were in flight at once."""

    def __init__(
        self,
        tokenizer: Any,
        script: Callable[[str], str],
        *,
        hold: int = 0,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self.tokenizer = tokenizer
        self.script = script
        self.hold = hold
        self.ready = ready
        self.requests: list[dict[str, Any]] = []
        self.held_together = 0
        """How many requests were held at once (equals `hold` when the hold worked)."""
        self.ready_while_held = False
        self._lock = threading.Lock()
        self._arrived = 0
        self._released: asyncio.Event | None = None
        self.app = Starlette(routes=[Route("/v1/completions", self._completions, methods=["POST"])])

    async def _completions(self, request: Request) -> JSONResponse:
        payload = await request.json()
        prompt = payload.get("prompt")
        if not isinstance(prompt, list) or not all(isinstance(token, int) for token in prompt):
            return JSONResponse({"error": "prompt must be token ids"}, status_code=400)
        with self._lock:
            self.requests.append(payload)
        await self._held()
        text = self.script(self.tokenizer.decode(prompt))
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][: payload["max_tokens"]]
        choice = {
            "index": 0,
            "text": self.tokenizer.decode(ids),
            "token_ids": ids,
            "logprobs": {"token_logprobs": [STAND_IN_LOGPROB] * len(ids)},
            "finish_reason": "stop",
        }
        return JSONResponse({"object": "text_completion", "model": payload.get("model"), "choices": [choice]})

    async def _held(self) -> None:
        if self._released is None:
            self._released = asyncio.Event()
        self._arrived += 1
        if self._arrived > self.hold:
            return
        if self._arrived < self.hold:
            await _bounded(self._released.wait(), HOLD_S)
            return
        self.held_together = self._arrived
        self.ready_while_held = await asyncio.to_thread(until, self.ready, HOLD_S)
        self._released.set()


async def _bounded(waiting: Any, seconds: float) -> None:
    try:
        await asyncio.wait_for(waiting, seconds)
    except TimeoutError:
        return
