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
