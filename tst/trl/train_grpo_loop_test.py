"""`examples/train_grpo.py`'s whole loop on the CPU: the train split sampled K times, GRPO on the tasks
with signal only, the eval split scored before and after, as a user runs it with the loop's flags.

The model is the script's tiny one, built offline; it calls no tool by itself, so its `generate` is
stood in for, as in grpo_test.py, by one that plays the example bundle's reference solutions: each
conversation of a task in `PLAYS` solves it or gives up, in the turn that list gives it; every other
task is given up on. The evaluations (TransformersPolicy) and GRPOTrainer both call it: everything
else, the server, the verifiers, the player, the selection and the trainer, is the real code.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

import torch  # noqa: E402

from agent_env import load_bundle, load_solutions, read_trajectories  # noqa: E402
from agent_env.eval import EvalResult  # noqa: E402
from examples.train_grpo import LABEL, WHARF, parse, tiny_model_and_tokenizer, train  # noqa: E402
from tst.trl._generated import followed_by  # noqa: E402

SOLVE, GIVE_UP = True, False
PLAYS: dict[str, Sequence[bool]] = {
    "store-crate-000": [SOLVE],
    "restock-000": [SOLVE],
    "move-crate-000": [SOLVE, GIVE_UP],
    "store-crate-001": [GIVE_UP, SOLVE],
    "restock-001": [SOLVE, GIVE_UP],
    "move-crate-001": [GIVE_UP, SOLVE],
    "store-crate-100": [SOLVE],
    "move-crate-100": [SOLVE],
    "restock-100": [SOLVE],
}
"""Each task's conversations in turn, round and round: with 2 samples a task, the first two train
tasks pass always, the next four half the time, and every other train task never."""
BAND = (0.25, 0.75)
NOISE = "I cannot help with that.<|im_end|>"


def _call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


class PlaysTheSolutions:
    """`generate` for the tiny model: each row's completion decided by its conversation so far.

    A conversation is the task whose first prompt it holds (tasks whose first prompt another task
    shares are never solved). A solving conversation makes the reference play's calls in order, the
    n-th completion being the call after n tool results, each turn ended by `end_turn` with its reply;
    a conversation that gives up answers `NOISE`, which ends the turn.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        bundle = load_bundle(WHARF)
        tasks = [task for split in bundle.splits for task in bundle.tasks(split)]
        shared = Counter(task.turns[0] for task in tasks)
        self.by_prompt = {task.turns[0]: task.id for task in tasks if shared[task.turns[0]] == 1}
        self.plays: dict[str, list[str]] = {}
        for split in bundle.splits:
            for task_id, script in load_solutions(bundle, split).items():
                self.plays[task_id] = [
                    completion
                    for turn in script.turns
                    for completion in [
                        *(_call(call.tool, call.arguments) for call in turn.all_calls),
                        _call("end_turn", {"reply": turn.reply}),
                    ]
                ]
        self.started: Counter[str] = Counter()

    def __call__(self, input_ids: torch.Tensor, attention_mask: Any = None, **_: Any) -> torch.Tensor:
        texts = self.tokenizer.batch_decode(input_ids)
        return followed_by(self.tokenizer, input_ids, [self._next(text) for text in texts])

    def _next(self, text: str) -> str:
        task_id = next((task for prompt, task in self.by_prompt.items() if prompt in text), None)
        if task_id not in PLAYS:
            return NOISE
        if text.count("<|im_start|>assistant") == 1:  # the conversation's first completion
            nth = self.started[task_id]
            self.started[task_id] += 1
            if PLAYS[task_id][nth % len(PLAYS[task_id])] is GIVE_UP:
                return NOISE
        elif "<tool_response>" not in text:  # it gave up at its first completion
            return NOISE
        play, made = self.plays[task_id], text.count("<tool_response>")
        return play[made] if made < len(play) else "Done.<|im_end|>"


@pytest.mark.timeout(120)
def test_the_whole_loop_samples_train_trains_on_the_tasks_with_signal_and_scores_eval_before_and_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_out, record = tmp_path / "eval", tmp_path / "training"
    options, plan = parse(
        [
            *("--steps", "1", "--max-completion-length", "512", "--record", str(record)),
            *("--select-by-pass-rate", str(BAND[0]), str(BAND[1]), "--samples", "2"),
            *("--eval-split", "eval", "--eval-out", str(eval_out)),
        ]
    )
    model, tokenizer = tiny_model_and_tokenizer()

    with mock.patch.object(model, "generate", side_effect=PlaysTheSolutions(tokenizer)):
        train(options, plan, model, tokenizer)

    lines = capsys.readouterr().out.splitlines()
    sampled = EvalResult.read(eval_out / "pass-rates" / "results.json")
    assert (sampled.split, len(sampled.tasks)) == ("train", 33)
    assert all(task.samples == 2 and task.pass_rate is not None for task in sampled.tasks)
    assert sorted(Counter(task.pass_rate for task in sampled.tasks).items()) == [
        (0.0, 27),
        (0.5, 4),
        (1.0, 2),
    ]
    within = {task.index for task in sampled.tasks if BAND[0] <= (task.pass_rate or 0.0) <= BAND[1]}
    [kept] = [line for line in lines if line.startswith("kept ")]
    assert kept.startswith(f"kept {len(within)} of 33 train tasks")
    trained_on = {t.task.index for t in read_trajectories(record) if t.client == LABEL}
    assert trained_on and trained_on <= within, "GRPO played a task outside the band"

    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["step", "reward", "spread"])
    signal = lines[header].split().index("signal")
    assert float(lines[header + 1].split()[signal]) == 1.0, "a group of the kept tasks had no signal"

    table = lines[next(i for i, line in enumerate(lines) if line.split() == ["stage", "eval", "split"]) :]
    scores = {
        stage: EvalResult.read(eval_out / stage / "results.json").mean_score for stage in ("before", "after")
    }
    assert [row.split() for row in table] == [
        ["stage", "eval", "split"],
        ["before", f"{scores['before']:.3f}"],
        ["after", f"{scores['after']:.3f}"],
    ]
    assert scores["before"] == pytest.approx(3 / 11)
