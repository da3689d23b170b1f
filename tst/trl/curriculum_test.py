"""The online curriculum under TRL's own trainers, unchanged: GRPOTrainer trains on
`AgentEnv.curriculum(...).dataset` with its callback, and AsyncGRPO's rollout worker plays its rows
from the unpickled factory. Three tasks of one toolset: one the model always solves, one it never
solves, one it solves in one rollout of every third group. The model's `generate` is scripted (and
vLLM stood in for under AsyncGRPO); the curriculum draws on a real server on loopback.

What they prove: every rollout of a GRPO group gets the group's task, under both trainers; the
curriculum draws the rarely solved task more often than the other two; a checkpoint keeps the
curriculum's state; and the end of training prints its table.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

from trl import GRPOTrainer  # noqa: E402

from agent_env._contexts import VerifierContext  # noqa: E402
from agent_env.openenv import BackgroundServer, build_served_app  # noqa: E402
from agent_env.testing import FakeTask, calls, fake_served  # noqa: E402
from agent_env.training.trl import AgentEnv  # noqa: E402
from agent_env.training.trl._classes import ToolsetEnvironment  # noqa: E402
from agent_env.training.trl._curriculum import STATE_FILE  # noqa: E402
from examples.train_grpo import grpo_config, tiny_model_and_tokenizer  # noqa: E402
from tst.support.tools import add_crate, list_crates  # noqa: E402
from tst.trl._async_worker import collect_groups, rollout_worker, stop  # noqa: E402
from tst.trl._generated import ScriptedGenerate  # noqa: E402
from tst.trl._vllm_stand_in import StandInVLLM  # noqa: E402

GENERATIONS = 2
MESSAGES = {"Always store C1.": "always", "Never store anything.": "never", "Rarely store C1.": "rare"}


def stored(context: VerifierContext) -> float:
    return 1.0 if any(name == "add_crate" for name, _ in calls(context)) else 0.0


def tasks() -> list[FakeTask]:
    return [
        FakeTask(name, tools=[add_crate, list_crates], turns=(message,), envs=("dock",), score=stored,
                 system_prompt="You work on the dock.")
        for message, name in MESSAGES.items()
    ]  # fmt: skip


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


class Dockhand:
    """The model, by rule: `always` stores a crate, `never` answers in text, `rare` stores one in the
    first rollout of every third group it plays (counted per task, so the rule holds however the
    groups interleave); a rollout that stored ends its turn."""

    def __init__(self) -> None:
        self.rare_rollouts = 0

    def __call__(self, conversation: str) -> str:
        if "<tool_response>" in conversation:
            return call("end_turn", reply="Stored.")
        name = next(name for message, name in MESSAGES.items() if message in conversation)
        if name == "rare":
            rollout, self.rare_rollouts = self.rare_rollouts, self.rare_rollouts + 1
            if rollout % (3 * GENERATIONS) == 0:
                return call("add_crate", crate="C1", bay=2)
        if name == "always":
            return call("add_crate", crate="C1", bay=2)
        return "Nothing to do.<|im_end|>"


class Scripted(ScriptedGenerate):
    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer)
        self.model = Dockhand()

    def _completion(self, row: int, text: str, first_call: bool) -> str:
        return self.model(text)


@pytest.fixture
def served() -> Iterator[str]:
    server = BackgroundServer(build_served_app(fake_served({"train": tasks()}))).start()
    yield server.url
    server.stop()


def groups_of(opened: list[str]) -> list[str]:
    """The task each group played, from the messages its rollouts' resets returned, in order; each
    group's must all be one."""
    groups = [opened[n : n + GENERATIONS] for n in range(0, len(opened), GENERATIONS)]
    split = [group for group in groups if len(set(group)) != 1]
    assert split == [], f"groups whose rollouts got different tasks: {split}"
    return [MESSAGES[group[0]] for group in groups]


def train(env: AgentEnv, curriculum: Any, out: Path, *, steps: int, resume: Path | None = None) -> list[str]:
    """GRPOTrainer on the curriculum for `steps` steps (a checkpoint every 8), resumed from `resume`;
    the message each rollout's reset returned, in order."""
    opened: list[str] = []
    original = ToolsetEnvironment.reset

    def kept(self: ToolsetEnvironment, **row: Any) -> str | None:
        message = original(self, **row)
        assert message is not None
        opened.append(message)
        return message

    model, tokenizer = tiny_model_and_tokenizer()
    config = grpo_config(
        str(out), on_cpu=True, max_completion_length=128, max_steps=steps, save_strategy="steps", save_steps=8
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        processing_class=tokenizer,
        train_dataset=curriculum.dataset,
        environment_factory=env.factory,
        callbacks=[curriculum.callback],
    )
    with (
        mock.patch.object(trainer.model, "generate", side_effect=Scripted(tokenizer)),
        mock.patch.object(ToolsetEnvironment, "reset", kept),
    ):
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    return opened


def draws(state: dict[str, Any]) -> int:
    return sum(task["draws"] for task in state["splits"]["train"]["tasks"].values())


def test_grpo_trainer_on_the_curriculum_keeps_groups_whole_and_draws_the_rarely_solved_task_most(
    served: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = AgentEnv(served)
    try:
        curriculum = env.curriculum(seed=0, rows=256)
        drawn = Counter(groups_of(train(env, curriculum, tmp_path / "out", steps=16)))
        state = curriculum.state()
    finally:
        env.close()

    assert sum(drawn.values()) == 32
    assert drawn["rare"] > drawn["always"] and drawn["rare"] > drawn["never"], drawn
    saved = json.loads((tmp_path / "out" / "checkpoint-8" / STATE_FILE).read_text())
    assert draws(saved) == 16 and draws(state) == 32
    assert "online curriculum of split 'train': 3 of 3 tasks drawn" in capsys.readouterr().out


def test_a_run_resumed_from_a_checkpoint_goes_on_from_the_curriculum_it_kept(
    served: str, tmp_path: Path
) -> None:
    first = AgentEnv(served)
    try:
        train(first, first.curriculum(seed=0, rows=256), tmp_path / "out", steps=8)
    finally:
        first.close()
    kept = json.loads((tmp_path / "out" / "checkpoint-8" / STATE_FILE).read_text())

    again = AgentEnv(served)
    try:
        curriculum = again.curriculum(seed=0, rows=256)  # a new run, which the checkpoint restores
        opened = train(
            again, curriculum, tmp_path / "out", steps=12, resume=tmp_path / "out" / "checkpoint-8"
        )
        state = curriculum.state()
    finally:
        again.close()

    assert len(groups_of(opened)) == 8, "the resumed run played its last four steps' groups"
    assert draws(kept) == 16 and draws(state) == 16 + 8
    for index, task in kept["splits"]["train"]["tasks"].items():
        assert state["splits"]["train"]["tasks"][index]["draws"] >= task["draws"]


@pytest.mark.timeout(240)
def test_asyncgrpo_s_rollout_worker_plays_the_curriculum_s_groups_whole(served: str) -> None:
    env = AgentEnv(served)
    _, tokenizer = tiny_model_and_tokenizer()
    vllm = BackgroundServer(StandInVLLM(tokenizer, Dockhand()).app).start()
    try:
        curriculum = env.curriculum(seed=1, rows=64)
        env.factory  # noqa: B018  # built here, before the worker pickles it
        worker = rollout_worker(env, tokenizer, vllm.url, curriculum.dataset, generations=GENERATIONS)
        try:
            worker.start()
            samples = collect_groups(worker, set(range(8)), generations=GENERATIONS)
        finally:
            stop(worker)
        state = curriculum.state()
    finally:
        vllm.stop()
        env.close()

    for group in range(8):
        messages = {
            next(m["content"] for m in sample.prompt if m["role"] == "user") for sample in samples[group]
        }
        assert len(messages) == 1 and messages <= set(MESSAGES), f"group {group} got {messages}"
    plays = sum(task["plays"] for task in state["splits"]["train"]["tasks"].values())
    assert plays >= 8 * GENERATIONS, "the rollouts' scores went back to the curriculum"
