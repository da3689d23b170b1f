"""`tiny_model_for`: a tiny Qwen3 and its tokenizer built offline from a bundle's own texts, the start of
a smoke SFT and GRPO run on the CPU before any real model is downloaded."""

from __future__ import annotations

import os

import pytest

from tst.support.bundles import make_bundle
from tst.support.wharf import WHARF

pytestmark = pytest.mark.needs("trl_installed")

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ.setdefault(variable, "1")


def test_a_tiny_model_for_a_bundle_comes_with_a_tokenizer_that_renders_and_reads_back_its_reference_plays():
    import torch

    from agent_env.training.trl import AgentEnv, tiny_model_for

    with AgentEnv.local(WHARF) as env:
        model, tokenizer = tiny_model_for(env, "train", vocab=1024, hidden=64, layers=1, seed=3)
        play = env.demonstrations("train")[0]

    text = tokenizer.apply_chat_template(play["messages"], tools=play["tools"], tokenize=False)
    ids = tokenizer(text)["input_ids"]
    assert "<tool_call>" in text and tokenizer.decode(ids) == text
    assert tokenizer.convert_tokens_to_ids("<tool_call>") in ids, "each template marker is one token"
    assert len(tokenizer) <= 1024 + 6 and model.config.vocab_size == len(tokenizer)
    assert model.config.num_hidden_layers == 1 and model.config.hidden_size == 64
    with torch.no_grad():
        logits = model(torch.tensor([ids[:32]])).logits
    assert logits.shape == (1, min(32, len(ids)), len(tokenizer))


def test_one_seed_builds_the_same_weights_and_a_split_without_reference_plays_gets_a_model(tmp_path):
    import torch

    from agent_env.training.trl import AgentEnv, tiny_model_for

    bundle = make_bundle(tmp_path / "b")  # a train split, no solutions/
    with AgentEnv.local(bundle) as env:
        first, tokenizer = tiny_model_for(env, "train", hidden=32, layers=1, seed=7)
        again, _ = tiny_model_for(env, "train", hidden=32, layers=1, seed=7)

    assert "Shelve Dune." in tokenizer.decode(tokenizer("Shelve Dune.")["input_ids"])
    weights, same = first.state_dict(), again.state_dict()
    assert weights.keys() == same.keys()
    assert all(torch.equal(weights[name], same[name]) for name in weights)
