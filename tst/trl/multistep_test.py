"""Steps in order teach a tiny model what flattened steps cannot: to act on what it looked up.

The helpdesk's tasks (`examples/helpdesk`) take two steps: look the customer up by name, then unlock
the account or refund the order the lookup named, then reply naming it; the lookup, the action and
the reply each earn part of the score. Its eval split is held out: no full name, username or order
number of it appears in training. A tiny model (the demo's recipe, `examples/demo.py`, its tokenizer
keeping each digit and each capitalised word a token of its own, so that an unseen name or number is
made of known tokens) is fine-tuned twice from the same seed, for the same steps: on
`env.demonstrations("train")` as they are, an assistant message per step as TRL's tool loop builds
it, and on the same rows flattened as demonstrations were once built (a turn's calls in one assistant
message, then all their results), where the action's argument must be written before the lookup's
answer is seen. The step-ordered model then samples each train task K times; `dataset_for` keeps the
tasks whose samples differ in score, and GRPOTrainer trains on them through `env.factory`. Held-out
scores are greedy. Seeds are fixed, torch runs deterministic algorithms on one thread and the
evaluations play one prompt at a time: the scores are the same on every run. The numbers are in
docs/experiments.md ("A multi-step task family").
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

from agent_env.client._tools import END_TURN  # noqa: E402
from agent_env.training.trl import (  # noqa: E402
    AgentEnv,
    rendered,
    tiny_model,
    tiny_tokenizer,
)
from agent_env.training.trl._demonstrations import features  # noqa: E402
from examples.demo import (  # noqa: E402
    Recipe,
    fine_tune,
    measure,
    reinforce,
)

HELPDESK = Path(__file__).resolve().parents[2] / "examples" / "helpdesk"
RECIPE = replace(
    Recipe(),
    isolate=r"[0-9]|[A-Z][a-z]+",
    sft_steps=450,
    samples=2,
    grpo_steps=30,
    grpo_batch=16,
    generations=8,
    grpo_learning_rate=3e-4,
    max_completion_length=128,
    max_tool_calling_iterations=4,
    eval_batch=1,
    eval_concurrency=4,
)
"""SFT long enough for the step-ordered model to copy a name and a number it never saw (its held-out
score jumps between steps 250 and 400); half the reference plays reply naming no value, which SFT
leaves the model doing in some tasks and GRPO teaches it not to."""
WITH_SPREAD = (0.01, None)
"""The tasks whose samples differ in score: what GRPO learns from."""
STEPS_OVER_FLATTENED = 0.5
"""Step-ordered rows reach a held-out score at least this much above flattened ones (measured: 0.880
against 0.234)."""
GRPO_GAIN = 0.08
"""GRPO on the tasks with spread raises the held-out score at least this much (measured: 0.880 to
0.979, the held-out tasks whose reply SFT left naming no value)."""


def flattened(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A step-ordered conversation as demonstrations were built before steps: each turn's tool calls
    but `end_turn` in one assistant message, then all their results (on every helpdesk play, exactly
    the rows `messages_of` built then, at a846569)."""
    made: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for message in messages:
        stepping = message["role"] == "assistant" and any(
            call["function"]["name"] != END_TURN for call in message.get("tool_calls") or []
        )
        if stepping:
            calls.extend(message["tool_calls"])
        elif message["role"] == "tool" and calls and message["name"] != END_TURN:
            results.append(message)
        else:
            if calls:
                made += [{"role": "assistant", "content": "", "tool_calls": calls}, *results]
                calls, results = [], []
            made.append(message)
    return made


def held_out(env: AgentEnv, model: Any, tokenizer: Any, out: Path) -> float:
    return measure(env.url, model, tokenizer, RECIPE, out, split="eval").mean_score or 0.0


@pytest.mark.timeout(900)
def test_step_ordered_rows_teach_what_flattened_ones_do_not_and_grpo_on_tasks_with_spread_adds_to_it(
    deterministic: None, tmp_path: Path
) -> None:
    import datasets

    with AgentEnv.local(HELPDESK, max_concurrent_envs=RECIPE.grpo_batch + RECIPE.eval_concurrency) as env:
        step_ordered = env.demonstrations("train", strict=True)
        flat = datasets.Dataset.from_list(
            [{**row, "messages": flattened(row["messages"])} for row in step_ordered], features=features()
        )
        tokenizer = tiny_tokenizer(
            rendered(step_ordered) + rendered(flat), vocab=RECIPE.vocab, isolate=RECIPE.isolate
        )
        models = {}
        for shape, rows in (("flattened", flat), ("step-ordered", step_ordered)):
            models[shape] = tiny_model(
                tokenizer, hidden=RECIPE.hidden, layers=RECIPE.layers, seed=RECIPE.seed
            )
            fine_tune(models[shape], tokenizer, rows, RECIPE, tmp_path / shape)
        after_sft = {
            shape: held_out(env, model, tokenizer, tmp_path / shape) for shape, model in models.items()
        }

        model = models["step-ordered"]
        sampled = measure(
            env.url,
            model,
            tokenizer,
            RECIPE,
            tmp_path / "samples",
            split="train",
            samples=RECIPE.samples,
            temperature=RECIPE.temperature,
        )
        with_spread = env.dataset_for("train", results=sampled, score_std=WITH_SPREAD)
        reinforce(model, tokenizer, with_spread, env.factory, RECIPE, tmp_path)
        after_grpo = held_out(env, model, tokenizer, tmp_path / "grpo")

    print(f"held-out: {after_sft} after SFT, {after_grpo:.3f} after GRPO on {len(with_spread)} tasks")
    assert after_sft["step-ordered"] >= after_sft["flattened"] + STEPS_OVER_FLATTENED, after_sft
    assert after_grpo >= after_sft["step-ordered"] + GRPO_GAIN, (after_sft, after_grpo)
