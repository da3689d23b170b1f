"""TRL's own GRPOTrainer trains a step on tasks whose later turns come from a simulated user (the
bundle's `users.py`), unchanged: `end_turn` answers with the user's message as a tool result, so
the model's next generation reads it, and it depends on what the model replied.

The bundle is served in process and records its trajectories. The model is the demo's tiny one;
its `generate` is stood in for: the first rollout of each group asks which book the member wants,
reads the answer, shelves it and ends; the second greets, reads a different answer, and stops.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

import torch  # noqa: E402
from trl import GRPOTrainer  # noqa: E402

from agent_env import read_trajectories  # noqa: E402
from agent_env.training.trl import AgentEnv  # noqa: E402
from examples.train_grpo import grpo_config, tiny_model_and_tokenizer  # noqa: E402
from tst.support.bundles import a_task, make_bundle  # noqa: E402
from tst.trl._generated import followed_by  # noqa: E402

USERS = """
def member(context):
    # A member who wants Dune: says so when asked which book, and leaves once it is shelved.
    if "Dune" in context.envs["shelf"].books:
        return None
    if "which" in context.reply.lower():
        return "Dune, please."
    return "Where is the book I asked for?"
"""

ASKED = "Dune, please."
NOT_ASKED = "Where is the book I asked for?"


def shelf_bundle(root: Path) -> Path:
    """The shelf bundle, its two tasks each with the member as their user."""
    user = {"function": "member", "max_turns": 3}
    tasks = [
        a_task(id=f"member-{n}", turns=["Hello, I would like a book shelved."], user=user) for n in (1, 2)
    ]
    return make_bundle(root, tasks={"train": tasks}, files={"users.py": textwrap.dedent(USERS)})


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


class StandInGenerate:
    """`generate` for the tiny model; every conversation it was asked to continue is kept."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.seen: list[str] = []

    def __call__(self, input_ids: torch.Tensor, attention_mask: Any = None, **_: Any) -> torch.Tensor:
        first = not self.seen
        texts = self.tokenizer.batch_decode(input_ids)
        self.seen.extend(texts)
        completions = [self._completion(row, text, first) for row, text in enumerate(texts)]
        return followed_by(self.tokenizer, input_ids, completions)

    @staticmethod
    def _completion(row: int, text: str, first: bool) -> str:
        if first:  # rows are the groups' rollouts in order: the first of each group asks
            return call("end_turn", reply="Which book would you like?" if row % 2 == 0 else "Hello there.")
        if NOT_ASKED in text:
            return "I do not know.<|im_end|>"
        answered = text.count("<tool_response>")
        if answered == 1:
            return call("put_book", title="Dune")
        if answered == 2:
            return call("end_turn", reply="Dune is on the shelf.")
        return "Enjoy your book.<|im_end|>"


def test_grpo_trainer_trains_on_a_simulated_user_whose_answer_depends_on_the_model_s_reply(
    tmp_path: Path,
) -> None:
    record = tmp_path / "trajectories"
    env = AgentEnv.local(shelf_bundle(tmp_path / "bundle"), record=record)
    try:
        model, tokenizer = tiny_model_and_tokenizer()
        config = grpo_config(
            str(tmp_path / "out"), on_cpu=True, max_completion_length=256, max_steps=1, shuffle_dataset=False
        )
        trainer = GRPOTrainer(
            model=model,
            args=config,
            processing_class=tokenizer,
            train_dataset=env.dataset,
            environment_factory=env.factory,
        )
        generate = StandInGenerate(tokenizer)

        with mock.patch.object(trainer.model, "generate", side_effect=generate):
            trainer.train()
    finally:
        env.close()

    read = sorted(read_trajectories(record), key=lambda t: (t.task.id, t.started_at or 0))
    assert [t.score for t in read] == [1.0, 0.0, 1.0, 0.0]
    asked, greeted = read[0], read[1]
    assert [(turn.prompt, turn.reply) for turn in asked.turns] == [
        ("Hello, I would like a book shelved.", "Which book would you like?"),
        (ASKED, "Dune is on the shelf."),
    ]
    # the greeting's rollout stopped talking: get_reward ended its turns until the user's max_turns
    assert [(turn.prompt, turn.reply) for turn in greeted.turns] == [
        ("Hello, I would like a book shelved.", "Hello there."),
        (NOT_ASKED, ""),
        (NOT_ASKED, ""),
    ]
    # what the model read next: the user's answer, as end_turn's tool result
    assert any(f"<tool_response>\n{ASKED}\n</tool_response>" in text for text in generate.seen)
    assert any(f"<tool_response>\n{NOT_ASKED}\n</tool_response>" in text for text in generate.seen)
    logged = trainer.state.log_history[0]
    assert logged["reward"] == pytest.approx(0.5)
    assert logged["tools/failure_frequency"] == 0
