"""TRL's own GRPOTrainer trains a step on the CPU through the helper, unchanged.

The server is `build_served_app` over the Episode API's fake steps: a dock-like toolset with
`add_crate`, scored 1 when a crate was stored. The model is the demo's tiny one, built offline; a
random model never calls a tool, so its `generate` is stood in for, as TRL's own environment tests
do: in each group of two rollouts, the first stores a crate and ends its turn, the second answers
without a tool.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

import torch  # noqa: E402
from trl import GRPOTrainer  # noqa: E402

from agent_env._contexts import VerifierContext  # noqa: E402
from agent_env.openenv import build_served_app  # noqa: E402
from agent_env.testing import FakeTask, calls, fake_served  # noqa: E402
from agent_env.training.trl import AgentEnv, GroupsWithSignal  # noqa: E402
from examples.train_grpo import grpo_config, tiny_model_and_tokenizer  # noqa: E402
from tst.support.frames import RecordFrames  # noqa: E402
from tst.support.tools import add_crate, list_crates  # noqa: E402
from tst.support.waiting import until  # noqa: E402
from tst.trl._generated import ScriptedGenerate  # noqa: E402

STORE = {"name": "add_crate", "arguments": {"crate": "C1", "bay": 2}}
END = {"name": "end_turn", "arguments": {"reply": "Stored."}}


def stored_a_crate(context: VerifierContext) -> float:
    return 1.0 if any(name == "add_crate" for name, _ in calls(context)) else 0.0


def call(tool: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps(tool)}\n</tool_call><|im_end|>"


class StandInGenerate(ScriptedGenerate):
    """`generate` for the tiny model: each row's completion decided by the conversation so far; the
    rows in `tool_rows` (default: the first of each group of two) store a crate, the others answer."""

    def __init__(self, tokenizer: Any, tool_rows: frozenset[int] = frozenset({0, 2})) -> None:
        super().__init__(tokenizer)
        self.tool_rows = tool_rows

    def _completion(self, row: int, text: str, first_call: bool) -> str:
        if first_call:  # rows are the groups' rollouts in order
            return call(STORE) if row in self.tool_rows else "I cannot help with crates.<|im_end|>"
        responses = text.count("<tool_response>")
        return call(END) if responses == 1 else "Crate C1 is in bay 2.<|im_end|>"


@pytest.fixture
def served() -> Iterator[tuple[AgentEnv, list[FakeTask], RecordFrames]]:
    tasks = [
        FakeTask(task_id, tools=[add_crate, list_crates], envs=("dock",), score=stored_a_crate)
        for task_id in ("store", "store-again")
    ]
    recorder = RecordFrames(build_served_app(fake_served({"train": tasks})))
    env = AgentEnv.serving(recorder)
    try:
        yield env, tasks, recorder
    finally:
        env.close()


def test_grpo_trainer_trains_a_step_on_the_cpu_with_rewards_the_environment_owns(
    served: tuple[AgentEnv, list[FakeTask], RecordFrames], tmp_path: Any
) -> None:
    env, tasks, recorder = served
    model, tokenizer = tiny_model_and_tokenizer()
    config = grpo_config(
        str(tmp_path),
        on_cpu=True,
        max_completion_length=128,
        max_steps=1,
        learning_rate=1e-2,
        shuffle_dataset=False,
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        processing_class=tokenizer,
        train_dataset=env.dataset,
        environment_factory=env.factory,
    )
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}

    with mock.patch.object(trainer.model, "generate", side_effect=StandInGenerate(tokenizer)):
        trainer.train()

    resets = recorder.of_type("reset")  # the rollouts' only: building the factory deployed nothing
    assert [(r["split"], r["index"]) for r in resets] == [
        ("train", 0),
        ("train", 0),
        ("train", 1),
        ("train", 1),
    ]
    steps = recorder.of_type("step")
    assert [s["tool"] for s in steps if s["kind"] == "call_tool"] == ["add_crate", "add_crate"]
    # the tool-using rollouts end their turn themselves; get_reward ends the others' with an empty reply
    assert [s["reply"] for s in steps if s["kind"] == "end_turn"] == ["Stored.", "Stored.", "", ""]
    rollouts = tasks[0].episodes + tasks[1].episodes
    assert [e.score for e in rollouts] == [1.0, 0.0, 1.0, 0.0]
    logged = trainer.state.log_history[0]
    assert logged["rewards/dock/mean"] == pytest.approx(0.5)
    assert logged["tools/call_frequency"] == pytest.approx(1.0)
    assert logged["tools/failure_frequency"] == 0
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])]
    assert changed, "no parameter changed"
    assert until(lambda: all(task.live == [] for task in tasks), 30)


def stored_or_unscorable(context: VerifierContext) -> float:
    """1.0 once a crate is stored; a play that stored none cannot be scored (its reward is None)."""
    if stored_a_crate(context):
        return 1.0
    raise RuntimeError("nothing to score: no crate was stored")


def test_groups_with_signal_is_logged_beside_the_reward_as_the_share_of_groups_whose_rewards_differ(
    tmp_path: Any,
) -> None:
    # group 1 (task "unscorable"): rewards 1.0 and None, so no spread to learn from; group 2 ("store"):
    # 1.0 and 0.0. TRL's frac_reward_zero_std counts the first as spread (its NaN std is not 0).
    tasks = [
        FakeTask("unscorable", tools=[add_crate, list_crates], envs=("dock",), score=stored_or_unscorable),
        FakeTask("store", tools=[add_crate, list_crates], envs=("dock",), score=stored_a_crate),
    ]
    env = AgentEnv.serving(build_served_app(fake_served({"train": tasks})))
    model, tokenizer = tiny_model_and_tokenizer()
    config = grpo_config(
        str(tmp_path), on_cpu=True, max_completion_length=128, max_steps=1, shuffle_dataset=False
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        processing_class=tokenizer,
        train_dataset=env.dataset,
        environment_factory=env.factory,
        callbacks=[GroupsWithSignal()],
    )

    try:
        with mock.patch.object(trainer.model, "generate", side_effect=StandInGenerate(tokenizer)):
            trainer.train()
    finally:
        env.close()

    assert [e.score for e in tasks[0].episodes + tasks[1].episodes] == [1.0, None, 1.0, 0.0]
    logged = trainer.state.log_history[0]
    assert logged["groups_with_signal"] == 0.5
    assert "reward" in logged
