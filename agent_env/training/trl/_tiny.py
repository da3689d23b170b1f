"""A tiny chat model and its tokenizer, built here from a bundle's own texts: a whole SFT and GRPO run
on the CPU, offline, before any real model is downloaded (a smoke test of a bundle's training loop,
the demo, the trl tier's tests).

The tokenizer is a byte-level BPE trained on the texts given, with merges across words (the tool
schemas every prompt repeats then cost a few tokens) and Qwen3's chat template as TRL ships it, so
GRPOTrainer's tool-calling loop parses the model's calls as it does a real Qwen3's. The model is a
Qwen3 of a few layers, untrained: SFT on the bundle's reference plays teaches it the format.
transformers, tokenizers and TRL are imported when a function is called, never at import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_env.training.trl._errors import DemonstrationError

if TYPE_CHECKING:
    from agent_env.training.trl._agentenv import AgentEnv

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
TEMPLATE_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
"""The markers Qwen3's chat template writes: each one token, as in the real tokenizer."""


def tiny_tokenizer(texts: Sequence[str], *, vocab: int = 2048, isolate: str | None = None) -> Any:
    """A byte-level BPE of at most `vocab` tokens trained on `texts`, with Qwen3's chat template.

    Text matching the regex `isolate` is never merged with its neighbours: `r"[A-Z](?=[0-9])|[0-9]+"`
    keeps a label's letter and its number tokens of their own, so a label never seen in training is
    made of tokens the model knows."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    core = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.pre_tokenizer = (
        byte_level
        if isolate is None
        else pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(isolate), "isolated"), byte_level])
    )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=[*SPECIAL_TOKENS, *TEMPLATE_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    core.train_from_iterator(list(texts) or ["x"], trainer)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left"
    )
    tokenizer.add_tokens(list(TEMPLATE_TOKENS))
    tokenizer.chat_template = qwen3_chat_template
    return tokenizer


def tiny_model(tokenizer: Any, *, hidden: int = 128, layers: int = 2, seed: int = 0) -> Any:
    """An untrained Qwen3 for `tokenizer`: `layers` layers of width `hidden` (4 heads), its weights
    drawn from `seed`. 128 and 2 make some 0.4M parameters, which SFT trains in a minute on 2 cores."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=hidden // 4,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def rendered(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Conversations (`env.demonstrations` rows: `messages` and `tools`) as the chat template renders
    them: what a tokenizer learns its merges on."""
    template = tiny_tokenizer([], vocab=300)
    return [
        template.apply_chat_template(list(row["messages"]), tools=row.get("tools"), tokenize=False)
        for row in rows
    ]


def tiny_model_for(
    env: AgentEnv,
    split: str = "train",
    *,
    vocab: int = 2048,
    isolate: str | None = None,
    hidden: int = 128,
    layers: int = 2,
    seed: int = 0,
) -> tuple[Any, Any]:
    """A tiny model and its tokenizer for `env`'s bundle: the tokenizer trained on the split's
    reference plays (`env.demonstrations(split)`, when it has any) and on every task's prompt of the
    split, so the tasks without a play are in its merges too. Returns `(model, tokenizer)`."""
    try:
        texts = rendered(env.demonstrations(split))
    except DemonstrationError:  # a split without reference plays: its prompts alone
        texts = []
    texts += [str(row["prompt"][-1]["content"]) for row in env.dataset_for(split)]
    tokenizer = tiny_tokenizer(texts, vocab=vocab, isolate=isolate)
    return tiny_model(tokenizer, hidden=hidden, layers=layers, seed=seed), tokenizer


__all__ = ["rendered", "tiny_model", "tiny_model_for", "tiny_tokenizer"]
