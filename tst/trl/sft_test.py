"""TRL's own SFTTrainer trains a step on the CPU on the example bundle's demonstrations, unchanged, and
on the same plays' rows made from the server's recording of them (`demonstrations_from`).

The demonstrations are the wharf's reference plays, played on the bundle served in process; the
model is the demo's tiny one, built offline, with TRL's Qwen3 chat template.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

from trl import SFTConfig, SFTTrainer  # noqa: E402

from agent_env.training.trl import AgentEnv  # noqa: E402
from examples.train_grpo import tiny_model_and_tokenizer  # noqa: E402
from tst.support.wharf import WHARF  # noqa: E402


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the wharf's server records its episodes in, while it plays the demonstrations."""
    return tmp_path_factory.mktemp("recorded")


@pytest.fixture(scope="module")
def demonstrations(recorded: Path) -> Any:
    with AgentEnv.local(WHARF, record=recorded) as env:
        return env.demonstrations("train")


def one_step(rows: Any, output_dir: Path) -> tuple[SFTTrainer, Any]:
    """SFTTrainer on `rows`, the tiny model, one step on the CPU: the trainer and what it returned."""
    model, tokenizer = tiny_model_and_tokenizer()
    config = SFTConfig(
        output_dir=str(output_dir),
        max_steps=1,
        per_device_train_batch_size=2,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        max_length=2048,
    )
    trainer = SFTTrainer(model=model, args=config, train_dataset=rows, processing_class=tokenizer)
    return trainer, trainer.train()


def test_sft_trainer_tokenizes_the_demonstrations_and_trains_a_step_on_the_cpu(
    demonstrations, tmp_path
) -> None:
    trainer, done = one_step(demonstrations, tmp_path)

    assert len(trainer.train_dataset) == len(demonstrations)
    assert "input_ids" in trainer.train_dataset.column_names
    assert done.global_step == 1


def test_sft_trainer_trains_a_step_on_rows_made_from_the_servers_recorded_successes_a_step_per_call(
    demonstrations, recorded, tmp_path
) -> None:
    with AgentEnv.local(WHARF) as env:
        successes = env.demonstrations_from(recorded)

    trainer, done = one_step(successes, tmp_path)

    # A server sees calls one at a time: a step of several calls is a step per call in its recording.
    by_id = sorted(demonstrations.to_list(), key=lambda row: row["id"])
    expected = [{**row, "messages": a_step_per_call(row["messages"])} for row in by_id]
    assert sorted(successes.to_list(), key=lambda row: row["id"]) == expected
    assert expected != by_id, "the wharf has a step of several calls"
    assert len(trainer.train_dataset) == len(successes)
    assert done.global_step == 1


def a_step_per_call(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with each assistant message of several calls made a message per call, each
    followed by its result."""
    split: list[dict[str, Any]] = []
    at = 0
    while at < len(messages):
        message, calls = messages[at], messages[at].get("tool_calls") or []
        if message["role"] == "assistant" and len(calls) > 1:
            results = messages[at + 1 : at + 1 + len(calls)]
            for call, result in zip(calls, results, strict=True):
                split += [{**message, "tool_calls": [call]}, result]
            at += 1 + len(calls)
        else:
            split.append(message)
            at += 1
    return split


def test_a_rendered_demonstration_holds_its_tool_calls_real_arguments_and_the_servers_results(
    demonstrations,
) -> None:
    _, tokenizer = tiny_model_and_tokenizer()
    row = next(row for row in demonstrations if row["id"] == "store-then-move-000")

    text = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)

    assert json.dumps({"name": "add_crate", "arguments": {"crate": "C16", "bay": 2, "kind": "dry"}}) in text
    assert json.dumps({"name": "move_crate", "arguments": {"crate": "C16", "to_bay": 6}}) in text
    assert "null" not in text.split("</tools>")[-1]  # no argument a call lacks (a schema's defaults aside)
    assert "crate C16 (dry) stored in bay 2" in text and "crate C16 moved to bay 6" in text
    assert "Change of plan: move the crate you just stored to bay 6." in text
    assert '"name": "end_turn"' in text


def test_a_demonstrations_prompt_renders_exactly_as_grpo_trainer_renders_the_same_rollouts(
    demonstrations,
) -> None:
    _, tokenizer = tiny_model_and_tokenizer()
    with AgentEnv.local(WHARF) as env:
        row = next(row for row in demonstrations if row["id"] == "store-crate-000")
        environment = env.factory[next(r["environment"] for r in env.dataset if r["index"] == row["index"])]()
        offered = [  # what GRPOTrainer hands the chat template for this rollout: the bound methods
            getattr(environment, name)
            for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")
        ]
        prompt = row["messages"][:2]

        as_trained = tokenizer.apply_chat_template(prompt, tools=offered, tokenize=False)

    assert tokenizer.apply_chat_template(prompt, tools=row["tools"], tokenize=False) == as_trained
