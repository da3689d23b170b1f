"""TRL's own GRPOTrainer trains a step through AgentEnv on judged tasks (the concierge example, its
replies scored by a judge alone): each rollout's reward is the stand-in judge's verdict, normalised;
with a relative judge and `score_batch`, each GRPO group's rollouts are judged together, in one
request, and each reward is its verdict beside its group's.

The bundle is served in process with `AgentEnv.local(..., judge_url=...)`, its judge replaced by a
stand-in on loopback that scores by the example's rubric as a rule (half for naming the booked room,
half for courtesy). The model is the demo's tiny one; its `generate` is stood in for: the first
rollout of each group looks the booking up and answers (courteously for Ada, curtly for Alan), the
second answers at once in plain text, so `get_reward` ends its turn with an empty reply.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

import torch  # noqa: E402
from trl import GRPOTrainer  # noqa: E402

from agent_env.training.trl import AgentEnv, score_batch  # noqa: E402
from agent_env.training.trl._classes import ToolsetEnvironment  # noqa: E402
from examples.train_grpo import grpo_config, tiny_model_and_tokenizer  # noqa: E402
from tst.support.judge_stand_in import API_KEY, MODEL, JudgeStandIn, accurate_and_courteous  # noqa: E402
from tst.support.serving import Serve  # noqa: E402
from tst.trl._generated import ScriptedGenerate  # noqa: E402

pytestmark = pytest.mark.needs("judge_installed")

CONCIERGE = Path(__file__).resolve().parents[2] / "examples" / "concierge"
GUEST = re.compile(r"this is ([A-Z][a-z]+ [A-Z][a-z]+)\.")


def judged_alone(root: Path, **judge: Any) -> Path:
    """The concierge example, its tasks scored by the judge alone (its fields replaced by `judge`)."""
    shutil.copytree(CONCIERGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    tasks = [json.loads(line) for line in (root / "tasks" / "train.jsonl").read_text().splitlines()]
    for task in tasks:
        task["verifiers"] = [{**v, **judge} for v in task["verifiers"] if v["type"] == "judge"]
    (root / "tasks" / "train.jsonl").write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return root


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


class Concierge(ScriptedGenerate):
    def _completion(self, row: int, text: str, first_call: bool) -> str:
        guest = GUEST.findall(text)[-1]
        if first_call:  # rows are the groups' rollouts in order: the first of each looks up
            return call("find_booking", guest=guest) if row % 2 == 0 else "Hello! How may I help?<|im_end|>"
        if text.count("<tool_response>") == 1:
            room = json.loads(text.rsplit("<tool_response>\n", 1)[1].split("\n</tool_response>")[0])["room"]
            reply = f"Welcome! You are in room {room}." if guest.startswith("Ada") else f"Room {room}."
            return call("end_turn", reply=reply)
        return "Enjoy your stay.<|im_end|>"


def trained(
    tmp_path: Path, judge: JudgeStandIn, url: str, *, relative: bool = False
) -> tuple[GRPOTrainer, list[float | None], bool]:
    """One GRPO step on the concierge, judged by `judge` at `url` (with `score_batch` when `relative`):
    the trainer, the rewards get_reward handed TRL, and whether any parameter changed."""
    fields = {"relative": True} if relative else {}
    env = AgentEnv.local(judged_alone(tmp_path / "bundle", **fields), judge_url=url, judge_model=MODEL)
    rewards: list[float | None] = []
    original = ToolsetEnvironment.get_reward

    def kept(self: ToolsetEnvironment) -> float | None:
        reward = original(self)
        rewards.append(reward)
        return reward

    try:
        model, tokenizer = tiny_model_and_tokenizer()
        config = grpo_config(
            str(tmp_path / "out"), on_cpu=True, max_completion_length=512, max_steps=1, shuffle_dataset=False
        )
        trainer = GRPOTrainer(
            model=model,
            args=config,
            processing_class=tokenizer,
            train_dataset=env.dataset,
            environment_factory=env.factory,
            **({"reward_funcs": [score_batch]} if relative else {}),
        )
        before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
        with (
            mock.patch.object(trainer.model, "generate", side_effect=Concierge(tokenizer)),
            mock.patch.object(ToolsetEnvironment, "get_reward", kept),
        ):
            trainer.train()
    finally:
        env.close()
    changed = any(not torch.equal(p, before[n]) for n, p in trainer.model.named_parameters())
    return trainer, rewards, changed


def test_grpo_trainer_s_rewards_on_judged_tasks_are_the_judge_s_verdicts(
    serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = JudgeStandIn(rule=accurate_and_courteous)
    url = f"{serve(judge.app).url}/v1"
    monkeypatch.setenv("AGENTENV_JUDGE_KEY", API_KEY)

    trainer, rewards, changed = trained(tmp_path, judge, url)

    # Ada welcomed by her room; Ada unanswered; Alan told his room curtly; Alan unanswered
    assert rewards == [1.0, 0.0, 0.5, 0.0]
    assert sorted(rewards) == sorted(v["score"] / 10 for v in judge.verdicts)
    assert len(judge.requests) == 4
    assert trainer.state.log_history[0]["reward"] == pytest.approx(0.375)
    assert changed, "no parameter changed"


def test_with_score_batch_a_relative_judge_reads_each_grpo_group_together_and_rewards_are_its_verdicts(
    serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = JudgeStandIn(rule=accurate_and_courteous)
    url = f"{serve(judge.app).url}/v1"
    monkeypatch.setenv("AGENTENV_JUDGE_KEY", API_KEY)

    trainer, rewards, changed = trained(tmp_path, judge, url, relative=True)

    # alone Alan's curt answer scores 5 of 10; beside his group's unanswered rollout it is the best
    assert rewards == [1.0, 0.0, 1.0, 0.0]
    assert judge.groups == [2, 2] and len(judge.requests) == 2
    assert sorted(rewards) == sorted(v["score"] / 10 for v in judge.verdicts)
    assert trainer.state.log_history[0]["reward"] == pytest.approx(0.5)
    assert changed, "no parameter changed"
