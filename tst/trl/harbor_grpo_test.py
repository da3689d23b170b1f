"""GRPOTrainer trains a step through `AgentEnv.local` on a folder of Harbor tasks, its rewards written
by each task's tests/test.sh in the task's own Docker container.

The model is the demo's tiny one, built offline; its `generate` is stood in for, as TRL's own
environment tests do: the first rollout of each group runs the task's reference solution with `bash`
and ends its turn, the second answers without a tool (its turn ended by `get_reward`, its tests
then finding nothing done).
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

from agent_env import load_bundle, read_trajectories  # noqa: E402
from agent_env.training.trl import AgentEnv  # noqa: E402
from examples.train_grpo import grpo_config, tiny_model_and_tokenizer  # noqa: E402
from tst.support.harbor_tasks import DATASET  # noqa: E402
from tst.support.waiting import until  # noqa: E402
from tst.trl._generated import ScriptedGenerate  # noqa: E402

pytestmark = pytest.mark.needs("docker_engine")

BUNDLE = load_bundle(DATASET)
SOLUTIONS = {  # each task's instruction -> its reference play's bash command
    task.turns[0].strip(): BUNDLE.solutions["train"][task.id].turns[0].calls[0].arguments["command"]
    for task in BUNDLE.tasks("train")
}
END = {"name": "end_turn", "arguments": {"reply": "Done."}}


def call(tool: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps(tool)}\n</tool_call><|im_end|>"


class SolvingGenerate(ScriptedGenerate):
    """`generate` for the tiny model: rows 0 and 2 (the first rollout of each group of two) run their
    task's solution with bash, then end the turn, then say they are done; the others answer in words."""

    def _completion(self, row: int, text: str, first_call: bool) -> str:
        if not first_call:
            return call(END) if text.count("<tool_response>") == 1 else "Done.<|im_end|>"
        if row not in (0, 2):
            return "I would rather not touch the files.<|im_end|>"
        [command] = [command for instruction, command in SOLUTIONS.items() if instruction in text]
        return call({"name": "bash", "arguments": {"command": command}})


@pytest.fixture
def env(tmp_path: Any) -> Iterator[AgentEnv]:
    served = AgentEnv.local(DATASET, record=tmp_path / "trajectories")
    try:
        yield served
    finally:
        served.close()


def test_grpo_trainer_trains_a_step_on_harbor_tasks_with_rewards_from_their_test_sh(
    env: AgentEnv, tmp_path: Any
) -> None:
    model, tokenizer = tiny_model_and_tokenizer()
    config = grpo_config(
        str(tmp_path / "run"), on_cpu=True, max_completion_length=1024, max_steps=1, shuffle_dataset=False
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        processing_class=tokenizer,
        train_dataset=env.dataset,
        environment_factory=env.factory,
    )
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}

    with mock.patch.object(trainer.model, "generate", side_effect=SolvingGenerate(tokenizer)):
        trainer.train()

    logged = trainer.state.log_history[0]
    assert logged["reward"] == pytest.approx(0.5)
    assert logged["tools/call_frequency"] == pytest.approx(1.0)
    assert logged["tools/failure_frequency"] == 0
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])]
    assert changed, "no parameter changed"
    recorded = tmp_path / "trajectories"
    assert until(lambda: len(list(read_trajectories(recorded))) == 4, 60)
    played = sorted((t.task.id, t.score, t.verifiers[0].type) for t in read_trajectories(recorded))
    assert played == [
        ("greeting", 0.0, "test_script"),
        ("greeting", 1.0, "test_script"),
        ("lines", 0.0, "test_script"),
        ("lines", 1.0, "test_script"),
    ]
