"""One reply rule for eval, GRPOTrainer and AsyncGRPO: a turn's reply is what the model passes to
`end_turn`; a last answer in plain text ends the rollout (TRL's tool loop stops there) and is no reply.

The same four plays of one task go through `evaluate`, through GRPOTrainer's own tool loop (its
`generate` stood in for, as grpo_test.py does; with `score_batch`, the recommended reward function)
and through AsyncGRPO's own rollout worker (generating from a stand-in for vLLM): each play scores the
same in all three. The task gives half its score for a stored crate and half for the reply "Stored.".
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any
from unittest import mock

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

from trl import GRPOTrainer  # noqa: E402

from agent_env._contexts import VerifierContext  # noqa: E402
from agent_env.eval import END_TURN, AssistantMessage, ToolCall, evaluate  # noqa: E402
from agent_env.openenv import BackgroundServer, build_served_app  # noqa: E402
from agent_env.testing import FakeTask, calls, fake_served  # noqa: E402
from agent_env.training.trl import AgentEnv, score_batch  # noqa: E402
from examples.train_grpo import grpo_config, tiny_model_and_tokenizer  # noqa: E402
from tst.support.tools import add_crate, list_crates  # noqa: E402
from tst.trl._async_worker import collect_until, rollout_worker, stop  # noqa: E402
from tst.trl._generated import ScriptedGenerate  # noqa: E402
from tst.trl._vllm_stand_in import StandInVLLM  # noqa: E402

REPLY = "Stored."
Answer = tuple[str, dict[str, Any]] | str
"""One answer of a play: a tool call (name, arguments), or plain text."""

PLAYS: dict[str, Sequence[Answer]] = {
    "store, then end_turn with the reply": [
        ("add_crate", {"crate": "C1", "bay": 2}),
        (END_TURN, {"reply": REPLY}),
    ],
    "store, then the reply in plain text": [("add_crate", {"crate": "C2", "bay": 2}), REPLY],
    "the reply in plain text alone": [REPLY],
    "end_turn with the reply alone": [(END_TURN, {"reply": REPLY})],
}
EXPECTED = {
    "store, then end_turn with the reply": 1.0,
    "store, then the reply in plain text": 0.5,
    "the reply in plain text alone": 0.0,
    "end_turn with the reply alone": 0.5,
}
AFTER_THE_TASK = "Done."
"""What a play answers once end_turn said the task is over: plain text, which ends TRL's loop."""


def stored_and_replied(context: VerifierContext) -> float:
    stored = any(name == "add_crate" for name, _ in calls(context))
    return 0.5 * stored + 0.5 * (context.reply == REPLY)


def play_of(episode_calls: list[tuple[str, dict[str, Any]]], replies: list[str]) -> str:
    """Which play an episode was, by what reached the server."""
    crates = [arguments["crate"] for name, arguments in episode_calls if name == "add_crate"]
    if crates:
        return (
            "store, then end_turn with the reply"
            if crates == ["C1"]
            else "store, then the reply in plain text"
        )
    return "end_turn with the reply alone" if replies == [REPLY] else "the reply in plain text alone"


@pytest.fixture
def served() -> Iterator[tuple[AgentEnv, FakeTask]]:
    task = FakeTask("store", tools=[add_crate, list_crates], envs=("dock",), score=stored_and_replied)
    env = AgentEnv.serving(build_served_app(fake_served({"train": [task]})))
    try:
        yield env, task
    finally:
        env.close()


def scores_by_play(task: FakeTask) -> dict[str, float | None]:
    """Each play's score, from the episodes scored (a worker stopped mid-play leaves some unscored)."""
    scored: dict[str, float | None] = {}
    for episode in task.episodes:
        if episode.score is not None:
            play = play_of(calls(episode), episode.replies)
            assert scored.setdefault(play, episode.score) == episode.score, f"{play} scored differently"
    return scored


def as_text(answer: Answer) -> str:
    """An answer as the tiny model's chat template (Qwen3's) writes it."""
    if isinstance(answer, str):
        return f"{answer}<|im_end|>"
    name, arguments = answer
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def next_text(play: str, answered: int) -> str:
    answers = PLAYS[play]
    return as_text(answers[answered]) if answered < len(answers) else as_text(AFTER_THE_TASK)


def play_in(conversation: str) -> str | None:
    """The play a conversation is, by its first answer; None before it answered."""
    parts = conversation.split("<|im_start|>assistant\n")
    if len(parts) < 3:
        return None
    first = parts[1]  # as the chat template renders it again: told apart by what it holds
    if '"C1"' in first:
        return "store, then end_turn with the reply"
    if '"C2"' in first:
        return "store, then the reply in plain text"
    return "end_turn with the reply alone" if END_TURN in first else "the reply in plain text alone"


def answered_in(conversation: str) -> int:
    return conversation.count("<|im_start|>assistant\n") - 1


def test_eval_plays_each_answer_to_the_same_score_as_the_trainers_would(
    served: tuple[AgentEnv, FakeTask], tmp_path: Any
) -> None:
    env, task = served
    order = list(PLAYS)
    lock = threading.Lock()
    started: dict[int, str] = {}

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AssistantMessage:
        with lock:
            mine = started.setdefault(id(messages), order[len(started)])
        answered = sum(1 for message in messages if message["role"] == "assistant")
        answers = PLAYS[mine]
        answer = answers[answered] if answered < len(answers) else AFTER_THE_TASK
        if isinstance(answer, str):
            return AssistantMessage(content=answer)
        name, arguments = answer
        return AssistantMessage(
            tool_calls=(ToolCall(f"call-{answered}", name, json.dumps(arguments), arguments),)
        )

    evaluate(env.url, policy, split="train", samples=len(PLAYS), concurrency=1, out=tmp_path)

    assert scores_by_play(task) == EXPECTED


class PlaysGenerate(ScriptedGenerate):
    """GRPOTrainer's `generate`: row n of the batch's first generation plays the n-th play."""

    def _completion(self, row: int, text: str, first_call: bool) -> str:
        play = list(PLAYS)[row] if first_call else play_in(text)
        assert play is not None, f"a conversation with no first answer: {text!r}"
        return next_text(play, answered_in(text))


def test_grpo_trainer_with_score_batch_gives_each_play_the_score_eval_gives_it(
    served: tuple[AgentEnv, FakeTask], tmp_path: Any
) -> None:
    env, task = served
    model, tokenizer = tiny_model_and_tokenizer()
    config = grpo_config(
        str(tmp_path),
        on_cpu=True,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=160,
        max_steps=1,
        shuffle_dataset=False,
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        processing_class=tokenizer,
        train_dataset=env.dataset,
        environment_factory=env.factory,
        reward_funcs=[score_batch],
    )

    with mock.patch.object(trainer.model, "generate", side_effect=PlaysGenerate(tokenizer)):
        trainer.train()

    assert scores_by_play(task) == EXPECTED
    logged = trainer.state.log_history[0]
    assert logged["rewards/dock/mean"] == pytest.approx(sum(EXPECTED.values()) / len(EXPECTED))


class PlaysScript:
    """The stand-in vLLM's script: each new rollout takes the next play, in order, round and round.

    The worker starts rollouts of the next groups while the first is played, so which group gets which
    plays is the worker's timing: the test tells a sample's play by its completion instead."""

    def __init__(self) -> None:
        self.order = itertools.cycle(PLAYS)
        self.lock = threading.Lock()

    def __call__(self, conversation: str) -> str:
        play = play_in(conversation)
        if play is None:
            with self.lock:
                play = next(self.order)
        return next_text(play, answered_in(conversation))


def play_of_sample(sample: Any) -> str:
    """The play a scored sample is, by its first answer (as `play_in` tells a conversation's)."""
    first = json.dumps(next(message for message in sample.completion if message["role"] == "assistant"))
    if "C1" in first:
        return "store, then end_turn with the reply"
    if "C2" in first:
        return "store, then the reply in plain text"
    return "end_turn with the reply alone" if END_TURN in first else "the reply in plain text alone"


def test_asyncgrpo_s_worker_gives_each_play_the_score_eval_gives_it(
    served: tuple[AgentEnv, FakeTask],
) -> None:
    env, task = served
    _, tokenizer = tiny_model_and_tokenizer()
    server = BackgroundServer(StandInVLLM(tokenizer, PlaysScript()).app).start()
    worker = rollout_worker(env, tokenizer, server.url, generations=len(PLAYS))
    try:
        worker.start()
        samples = collect_until(worker, lambda samples: {play_of_sample(s) for s in samples} == set(PLAYS))
    finally:
        stop(worker)
        server.stop()

    assert scores_by_play(task) == EXPECTED
    rewarded = {(play_of_sample(sample), sample.metrics["reward"]) for sample in samples}
    assert rewarded == set(EXPECTED.items())
