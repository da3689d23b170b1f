"""The helpdesk example: its committed tasks are what its generator writes; a task needs a lookup before
its action, scores partial credit, and its eval split holds out every name and value the train split
shows, so a score there measures the skill."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

import agent_env
from agent_env import Episode, ScriptedTurn, load_solutions, replay
from tst.support.generated import contents, generator

HELPDESK = Path(__file__).resolve().parents[3] / "examples" / "helpdesk"
BUNDLE = agent_env.load_bundle(HELPDESK)
MODULE = generator(HELPDESK)
VALUE = re.compile(r"\b(u[0-9]{4}|[0-9]{4})\b")


@pytest.mark.parametrize("sub", ["tasks", "solutions"])
def test_the_committed_files_are_exactly_what_generate_py_writes(sub: str, tmp_path: Path):
    MODULE.write(tmp_path)

    assert contents(tmp_path / sub) == contents(HELPDESK / sub)


def test_there_are_a_hundred_and_more_train_tasks_and_dozens_of_held_out_ones():
    assert len(BUNDLE.tasks("train")) >= 150
    assert len(BUNDLE.tasks("eval")) >= 40


def test_every_task_has_its_reference_play():
    for split in ("train", "eval"):
        assert set(load_solutions(BUNDLE, split)) == {task.id for task in BUNDLE.tasks(split)}


def mentioned(split: str) -> tuple[set[str], set[str]]:
    """Every customer's full name and every username or order number a split's tasks mention: in
    prompts, seeds and verifiers."""
    text = (HELPDESK / "tasks" / f"{split}.jsonl").read_text(encoding="utf-8")
    names = {f"{first} {last}" for first in MODULE.FIRST for last in MODULE.LAST}
    return {name for name in names if name in text}, set(VALUE.findall(text))


def test_no_name_username_or_order_number_of_the_eval_split_appears_anywhere_in_the_train_split():
    (held_out_names, held_out_values), (trained_names, trained_values) = mentioned("eval"), mentioned("train")

    assert held_out_names and held_out_values and trained_names and trained_values
    assert not held_out_names & trained_names, sorted(held_out_names & trained_names)[:10]
    assert not held_out_values & trained_values, sorted(held_out_values & trained_values)[:10]


def test_every_wording_of_every_kind_of_task_is_in_both_splits():
    for split in ("train", "eval"):
        prompts = [turn for task in BUNDLE.tasks(split) for turn in task.turns]
        for kind, wordings in MODULE.WORDINGS.items():
            for wording in wordings:
                pattern = re.escape(wording).replace(r"\{name\}", "[A-Z][a-z]+ [A-Z][a-z]+")
                assert any(re.fullmatch(pattern, prompt) for prompt in prompts), (split, kind, wording)


def test_no_prompt_gives_the_value_the_action_needs():
    for split in ("train", "eval"):
        for task in BUNDLE.tasks(split):
            assert not VALUE.search(task.turns[0]), task.id


def scores(split: str, play: Any) -> dict[str, float | None]:
    """Each task of `split` played by `play(reference_turns) -> turns`, with its score."""
    plays = {task["id"]: made["turns"] for task, made, _ in MODULE.make_split(split)}
    tasks = {task.id: task for task in BUNDLE.tasks(split)}

    async def played() -> dict[str, float | None]:
        found = {}
        for task_id, turns in plays.items():
            script = [ScriptedTurn.model_validate(turn) for turn in play(turns)]
            found[task_id] = (await replay(Episode(tasks[task_id]), script)).score
        return found

    return asyncio.run(played())


def with_calls(turns: list[dict[str, Any]], calls: list[dict[str, Any]], reply: str) -> list[dict[str, Any]]:
    return [{"calls": calls, "reply": reply}]


@pytest.mark.parametrize("split", ["train", "eval"])
def test_each_reference_play_scores_its_expected_score_and_doing_nothing_scores_0(split: str):
    expected = {solution.id: solution.expected_score for solution in load_solutions(BUNDLE, split).values()}

    assert scores(split, lambda turns: turns) == expected
    assert set(scores(split, lambda turns: [ScriptedTurn().model_dump()]).values()) == {0.0}


def test_about_half_the_train_split_s_reference_plays_reply_naming_no_value_and_score_three_quarters():
    expected = [solution.expected_score for solution in load_solutions(BUNDLE, "train").values()]
    terse = [play for _, play, _ in MODULE.make_split("train") if play["turns"][0]["reply"] == MODULE.TERSE]

    assert set(expected) == {0.75, 1.0}
    assert len(expected) / 3 <= expected.count(0.75) == len(terse) <= 2 * len(expected) / 3
    assert {solution.expected_score for solution in load_solutions(BUNDLE, "eval").values()} == {1.0}


def test_the_lookup_scores_a_quarter_acting_on_its_answer_a_half_and_the_reply_a_quarter():
    def lookup_only(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return with_calls(turns, turns[0]["calls"][:1], "")

    def guessed(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        lookup, action = turns[0]["calls"]
        arguments = action["arguments"].items()
        wrong = {key: "u0000" if value.startswith("u") else "0000" for key, value in arguments}
        return with_calls(turns, [lookup, {**action, "arguments": wrong}], "")

    def without_reply(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return with_calls(turns, turns[0]["calls"], MODULE.TERSE)

    assert set(scores("eval", lookup_only).values()) == {0.25}
    assert set(scores("eval", guessed).values()) == {0.25}
    assert set(scores("eval", without_reply).values()) == {0.75}
