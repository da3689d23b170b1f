"""A scripted model for the trainers section: each rollout makes K tool calls, one after another.

The same script answers both trainers, read from the conversation so far: the next call of `wait`
while fewer than K have been answered, then `end_turn`, then a last word. GRPOTrainer asks its
model's `generate` (`ScriptedGenerate` stands in for it, as TRL's own environment tests do);
AsyncGRPO's rollout worker asks a vLLM server's `/v1/completions` (`completions_app` serves the
script there, answering with token ids of the worker's own tokenizer). Generating costs next to
nothing either way, so what differs between the trainers is how they wait on the tools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

RESPONSE = "<tool_response>"
STAND_IN_LOGPROB = -0.25


@dataclass(frozen=True)
class Script:
    """The completion after `conversation`: K calls of `wait`, each after the last one's answer."""

    calls: int

    def __call__(self, conversation: str) -> str:
        answered = conversation.count(RESPONSE)
        if answered < self.calls:
            return _call("wait", step=answered + 1)
        if answered == self.calls:
            return _call("end_turn", reply="done")
        return "Done.<|im_end|>"


def _call(tool: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': tool, 'arguments': arguments})}\n</tool_call><|im_end|>"


class ScriptedGenerate:
    """`generate` for GRPOTrainer's tiny model: each row's prompt followed by the script's completion,
    the shorter ones padded, as `generate` answers."""

    def __init__(self, tokenizer: Any, script: Script) -> None:
        self.tokenizer = tokenizer
        self.script = script

    def __call__(self, input_ids: Any, attention_mask: Any = None, **_: Any) -> Any:
        import torch

        texts = self.tokenizer.batch_decode(input_ids)
        encoded = [self.tokenizer(self.script(text), add_special_tokens=False)["input_ids"] for text in texts]
        width = max(len(ids) for ids in encoded)
        pad = self.tokenizer.pad_token_id
        padded = [ids + [pad] * (width - len(ids)) for ids in encoded]
        return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype)], dim=-1)


def completions_app(tokenizer: Any, script: Script) -> Any:
    """vLLM's `/v1/completions` as TRL 1.16's rollout worker calls it: the conversation comes as token
    ids (`prompt`), the answer carries `token_ids` and `logprobs.token_logprobs`."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def completions(request: Request) -> JSONResponse:
        payload = await request.json()
        text = script(tokenizer.decode(payload["prompt"]))
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][: payload["max_tokens"]]
        choice = {
            "index": 0,
            "text": tokenizer.decode(ids),
            "token_ids": ids,
            "logprobs": {"token_logprobs": [STAND_IN_LOGPROB] * len(ids)},
            "finish_reason": "stop",
        }
        return JSONResponse({"object": "text_completion", "model": payload.get("model"), "choices": [choice]})

    return Starlette(routes=[Route("/v1/completions", completions, methods=["POST"])])
