"""The depot example: its committed tasks are what its generator writes, and its eval split holds out
every combination the train split teaches, so a score there measures transfer."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

import agent_env
from agent_env import Episode, ScriptedTurn, load_solutions, replay
from tst.support.generated import contents, generator

DEPOT = Path(__file__).resolve().parents[3] / "examples" / "depot"
BUNDLE = agent_env.load_bundle(DEPOT)
LABEL = re.compile(r"\b[A-Z][0-9]{2}\b")


@pytest.mark.parametrize("sub", ["tasks", "solutions"])
def test_the_committed_files_are_exactly_what_generate_py_writes(sub: str, tmp_path: Path):
    generator(DEPOT).write(tmp_path)

    assert contents(tmp_path / sub) == contents(DEPOT / sub)


def test_there_are_hundreds_of_train_tasks_and_at_least_100_held_out_ones():
    assert len(BUNDLE.tasks("train")) >= 300
    assert len(BUNDLE.tasks("eval")) >= 100


def labels_in(split: str) -> set[str]:
    """Every box label a split's tasks mention: in prompts, seeds and verifiers."""
    text = (DEPOT / "tasks" / f"{split}.jsonl").read_text(encoding="utf-8")
    return set(LABEL.findall(text))


def test_no_box_label_of_the_eval_split_appears_anywhere_in_the_train_split():
    held_out, trained = labels_in("eval"), labels_in("train")

    assert held_out and trained
    assert not held_out & trained, sorted(held_out & trained)[:10]


def test_no_eval_task_s_combination_of_wording_label_and_shelf_was_trained_on():
    trained = {turn for task in BUNDLE.tasks("train") for turn in task.turns}

    assert not [turn for task in BUNDLE.tasks("eval") for turn in task.turns if turn in trained]


def test_every_wording_of_every_kind_of_task_is_in_both_splits():
    module = generator(DEPOT)

    for split in ("train", "eval"):
        prompts = [turn for task in BUNDLE.tasks(split) for turn in task.turns]
        for kind, wordings in module.WORDINGS.items():
            for wording in wordings:
                pattern = re.escape(wording).replace(r"\{box\}", "[A-Z][0-9]{2}")
                pattern = pattern.replace(r"\{other\}", "[A-Z][0-9]{2}").replace(r"\{shelf\}", "[1-9]")
                assert any(re.fullmatch(pattern, prompt) for prompt in prompts), (split, kind, wording)


@pytest.mark.parametrize("split", ["train", "eval"])
def test_each_task_s_reference_play_scores_1_and_doing_nothing_scores_0_those_without_one_too(split: str):
    plays = {task["id"]: turns for task, turns, _ in generator(DEPOT).make_split(split)}
    tasks = {task.id: task for task in BUNDLE.tasks(split)}

    async def scores() -> list[tuple[str, float | None, float | None]]:
        found = []
        for task_id, turns in plays.items():
            script = [ScriptedTurn.model_validate(turn) for turn in turns]
            played = await replay(Episode(tasks[task_id]), script)
            idle = await replay(Episode(tasks[task_id]), [ScriptedTurn()])
            found.append((task_id, played.score, idle.score))
        return found

    assert plays.keys() == tasks.keys()
    assert all(played == 1.0 and idle == 0.0 for _, played, idle in asyncio.run(scores()))


def test_the_train_tasks_without_a_reference_play_are_those_in_the_undemonstrated_wordings_a_third_or_more():
    module = generator(DEPOT)
    solutions = load_solutions(BUNDLE, "train")
    made = module.make_split("train")

    without = {task["id"] for task, _, wording in made if wording in module.UNDEMONSTRATED}
    assert set(solutions) == {task["id"] for task, _, _ in made} - without
    assert len(without) >= len(made) // 3
    assert set(load_solutions(BUNDLE, "eval")) == {task.id for task in BUNDLE.tasks("eval")}
