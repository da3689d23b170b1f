"""GRPO through `AgentEnv` teaches a tiny model what no reference play showed it, and the skill carries
to tasks it never saw.

The depot's train tasks in two of its three ship wordings come without a reference play. A tiny model
fine-tuned on the reference plays it has (the demo's recipe, `examples/demo.py`) ships a box asked for
in those wordings only sometimes. GRPOTrainer then trains it through `env.factory` on those train
tasks, beside as many train tasks of the other kinds in the wordings it was shown (so that shipping
every box does not pay). It is measured greedily before and after on held-out tasks: ship tasks in
the practised wordings whose box labels (and the boxes beside them) come from the eval split's labels,
never seen in training, and the depot's own eval split. Seeds are fixed, torch runs deterministic
algorithms on one thread and the evaluations play one task at a time: the scores are the same on
every run.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

from agent_env.training.trl import (  # noqa: E402
    AgentEnv,
    rendered,
    tiny_model,
    tiny_tokenizer,
)
from examples.demo import (  # noqa: E402
    DEPOT,
    Recipe,
    fine_tune,
    measure,
    reinforce,
)
from examples.depot.generate import UNDEMONSTRATED, WORDINGS, labels, make_split, ship  # noqa: E402

RECIPE = replace(
    Recipe(),
    sft_steps=600,
    grpo_steps=40,
    grpo_batch=32,
    generations=8,
    grpo_learning_rate=3e-4,
    temperature=1.0,
    eval_batch=1,
    eval_concurrency=4,
)
PRACTISED = frozenset(WORDINGS["ship"]) & UNDEMONSTRATED
"""The ship wordings no reference play shows: what GRPO trains on, and what the held-out tasks ask in."""
HELD_OUT = 120
OTHERS = 64
"""How many train tasks of the other kinds, in demonstrated wordings, GRPO trains on beside them."""
ROOM = 0.5
"""After SFT the model ships the box in at most half the held-out tasks: room for GRPO to teach."""
MARGIN = 0.30
"""GRPO ships the box in at least 36 more of the 120 held-out tasks in the practised wordings."""
FORGETTING = 0.05
"""The depot's eval split loses at most 6 of its 120 tasks on the way."""


def held_out_ship_tasks(count: int) -> list[dict[str, Any]]:
    """Ship tasks in the practised wordings, made by the depot's generator from the eval split's labels."""
    rng, pool = random.Random("held-out-ship"), labels()["eval"]
    made: list[dict[str, Any]] = []
    while len(made) < count:
        task, _, wording = ship(rng, pool, len(made))
        if wording in PRACTISED:
            made.append({**task, "id": f"held-out-{task['id']}"})
    return made


def depot_with_held_out_ship_tasks(to: Path) -> Path:
    """The depot, beside its own splits a `held-out-ship` split of `HELD_OUT` tasks."""
    shutil.copytree(DEPOT, to, ignore=shutil.ignore_patterns("__pycache__"))
    rows = "".join(json.dumps(task) + "\n" for task in held_out_ship_tasks(HELD_OUT))
    (to / "tasks" / "held-out-ship.jsonl").write_text(rows, encoding="utf-8")
    return to


def practice_rows() -> list[int]:
    """The train split's rows that ask, in a practised wording, for a box to be shipped, and `OTHERS`
    rows spread over the tasks of the other kinds in the wordings SFT showed."""
    wordings = [wording for _, _, wording in make_split("train")]
    practised = [row for row, wording in enumerate(wordings) if wording in PRACTISED]
    shown = [
        row for row, wording in enumerate(wordings) if wording not in UNDEMONSTRATED | set(WORDINGS["ship"])
    ]
    return sorted(practised + shown[:: len(shown) // OTHERS][:OTHERS])


@pytest.mark.timeout(900)
def test_grpo_on_tasks_without_reference_plays_raises_the_held_out_score_in_their_wordings(
    deterministic: None, tmp_path: Path
) -> None:
    bundle = depot_with_held_out_ship_tasks(tmp_path / "depot")
    with AgentEnv.local(bundle, max_concurrent_envs=RECIPE.grpo_batch + RECIPE.eval_concurrency) as env:
        demonstrations = env.demonstrations("train")
        prompts = [row["prompt"][-1]["content"] for row in env.dataset]
        tokenizer = tiny_tokenizer(
            rendered(demonstrations) + prompts, vocab=RECIPE.vocab, isolate=RECIPE.isolate
        )
        model = tiny_model(tokenizer, hidden=RECIPE.hidden, layers=RECIPE.layers, seed=RECIPE.seed)
        fine_tune(model, tokenizer, demonstrations, RECIPE, tmp_path)

        def held_out(stage: str) -> dict[str, float]:
            return {
                split: measure(
                    env.url, model, tokenizer, RECIPE, tmp_path / stage / split, split=split
                ).mean_score
                or 0.0
                for split in ("held-out-ship", "eval")
            }

        after_sft = held_out("sft")
        practice = env.dataset.select(practice_rows())
        reinforce(model, tokenizer, practice, env.factory, RECIPE, tmp_path)
        after_grpo = held_out("grpo")

    assert after_sft["held-out-ship"] <= ROOM, "SFT alone does not teach the wordings it never showed"
    assert after_grpo["held-out-ship"] >= after_sft["held-out-ship"] + MARGIN, (after_sft, after_grpo)
    assert after_grpo["eval"] >= after_sft["eval"] - FORGETTING, (after_sft, after_grpo)
