"""What a stand-in for a model's `generate` returns: the prompts, each followed by its completion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def followed_by(tokenizer: Any, input_ids: torch.Tensor, completions: Sequence[str]) -> torch.Tensor:
    """`input_ids` with each row's completion appended as tokens, the shorter ones padded, as
    `generate` answers."""
    encoded = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in completions]
    width = max(len(ids) for ids in encoded)
    pad = tokenizer.pad_token_id
    padded = torch.tensor([ids + [pad] * (width - len(ids)) for ids in encoded], dtype=input_ids.dtype)
    return torch.cat([input_ids, padded], dim=-1)


class ScriptedGenerate:
    """`generate` for the tiny model, each row's completion written by a subclass's `_completion` from
    the conversation so far and whether this is the batch's first generation (whose rows are the
    groups' rollouts in order)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.calls = 0

    def __call__(self, input_ids: torch.Tensor, attention_mask: Any = None, **_: Any) -> torch.Tensor:
        first_call = self.calls == 0
        self.calls += 1
        texts = self.tokenizer.batch_decode(input_ids)
        completions = [self._completion(row, text, first_call) for row, text in enumerate(texts)]
        return followed_by(self.tokenizer, input_ids, completions)

    def _completion(self, row: int, text: str, first_call: bool) -> str:
        raise NotImplementedError("a script writes its completions")
