"""Writes the depot's tasks and their reference plays, the same every time.

    python examples/depot/generate.py [OUT_FOLDER]

A family of short tasks (store, move or ship a labelled box; store two), each in one of several
wordings, made to measure whether a model learns the skill rather than the answers: every box label
is a letter and two digits, and the labels of the eval split's tasks (their seeds included) never
appear in the train split. So no eval task's combination of wording, label and shelf was trained on.
The train tasks in some wordings (`UNDEMONSTRATED`) come without a reference play, as most tasks a
practitioner has do: fine-tuning on the reference plays never shows them, and only reinforcement
learning on the tasks themselves can teach them. The generator is seeded, so the committed files can
be checked by running this again (the unit tests do). Each reference play scores 1.0; doing nothing
scores 0.0 on every task.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Task = dict[str, Any]
Turn = dict[str, Any]
Made = tuple[Task, list[Turn], str]
"""A task, its reference play, and the wording it was written in."""

LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"
SHELVES = range(1, 10)
SEED = 31
SIZES = {"train": 480, "eval": 120}
EVAL_SHARE = 0.3
"""The share of all labels kept for the eval split."""

WORDINGS: dict[str, tuple[str, ...]] = {
    "store": (
        "Box {box} just arrived. Put it on shelf {shelf}.",
        "Store the new box {box} on shelf {shelf}.",
        "Shelf {shelf} takes box {box}, which came in today.",
        "A box labelled {box} is at the door; shelve it on {shelf}.",
    ),
    "move": (
        "Move box {box} to shelf {shelf}.",
        "Box {box} belongs on shelf {shelf} now.",
        "Take box {box} over to shelf {shelf}.",
        "Shelf {shelf} should hold box {box}; move it there.",
    ),
    "ship": (
        "Ship box {box}.",
        "Box {box} leaves the depot today: send it out.",
        "A buyer took box {box}. Ship it.",
    ),
    "store-two": (
        "Boxes {box} and {other} arrived. Put both on shelf {shelf}.",
        "Store the new boxes {box} and {other} on shelf {shelf}.",
    ),
}


UNDEMONSTRATED = frozenset(
    [*WORDINGS["store"][2:], *WORDINGS["move"][2:], *WORDINGS["ship"][1:], *WORDINGS["store-two"][1:]]
)
"""The wordings whose train tasks have no reference play (the eval split's tasks all have one)."""


def labels() -> dict[str, list[str]]:
    """Every label, shuffled once and cut into the train split's and the eval split's."""
    every = [f"{letter}{number}" for letter in LETTERS for number in range(10, 100)]
    random.Random(SEED).shuffle(every)
    cut = int(len(every) * EVAL_SHARE)
    return {"eval": sorted(every[:cut]), "train": sorted(every[cut:])}


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def _together(calls: list[dict[str, Any]]) -> list[Any]:
    """Independent calls as one step, made together in one answer (a lone call is a step alone)."""
    return [calls] if len(calls) > 1 else calls


def _boxes(rng: random.Random, pool: list[str], count: int) -> list[dict[str, Any]]:
    return [{"box": label, "shelf": rng.choice(SHELVES)} for label in rng.sample(pool, count)]


def _task(kind: str, n: int, text: str, seed: list[dict[str, Any]], after: list[dict[str, Any]]) -> Task:
    return {
        "id": f"{kind}-{n:03d}",
        "agent": "keeper",
        "turns": [text],
        "seed": {"shelves": {"boxes": seed}},
        "verifiers": [
            {"type": "items", "env": "shelves", "expected": sorted(after, key=lambda box: box["box"])}
        ],
    }


def _words(rng: random.Random, kind: str) -> str:
    return rng.choice(WORDINGS[kind])


def store(rng: random.Random, pool: list[str], n: int) -> Made:
    *seed, new = _boxes(rng, pool, rng.randint(0, 3) + 1)
    text = _words(rng, "store")
    task = _task("store", n, text.format(**new), seed, [*seed, new])
    return task, [{"calls": [_call("store", **new)], "reply": ""}], text


def move(rng: random.Random, pool: list[str], n: int) -> Made:
    seed = _boxes(rng, pool, rng.randint(1, 4))
    moved = rng.choice(seed)
    shelf = rng.choice([s for s in SHELVES if s != moved["shelf"]])
    after = [{**box, "shelf": shelf} if box is moved else box for box in seed]
    text = _words(rng, "move")
    task = _task("move", n, text.format(box=moved["box"], shelf=shelf), seed, after)
    return task, [{"calls": [_call("move", box=moved["box"], shelf=shelf)], "reply": ""}], text


def ship(rng: random.Random, pool: list[str], n: int) -> Made:
    seed = _boxes(rng, pool, rng.randint(1, 4))
    shipped = rng.choice(seed)
    text = _words(rng, "ship")
    task = _task("ship", n, text.format(box=shipped["box"]), seed, [b for b in seed if b is not shipped])
    return task, [{"calls": [_call("ship", box=shipped["box"])], "reply": ""}], text


def store_two(rng: random.Random, pool: list[str], n: int) -> Made:
    *seed, first, second = _boxes(rng, pool, rng.randint(0, 2) + 2)
    shelf = rng.choice(SHELVES)
    new = [{"box": first["box"], "shelf": shelf}, {"box": second["box"], "shelf": shelf}]
    text = _words(rng, "store-two")
    task = _task(
        "store-two", n, text.format(box=first["box"], other=second["box"], shelf=shelf), seed, [*seed, *new]
    )
    return task, [{"calls": _together([_call("store", **box) for box in new]), "reply": ""}], text


KINDS_OF_TASK: tuple[tuple[Callable[[random.Random, list[str], int], Made], int], ...] = (
    (store, 3),
    (move, 3),
    (ship, 2),
    (store_two, 2),
)
"""Each kind of task and its weight: of every ten tasks, three store, three move, two ship, two store two."""


def make_split(split: str) -> list[Made]:
    """Every task of `split`, with its reference play and wording."""
    rng = random.Random(f"{SEED}-{split}")
    pool = labels()[split]
    cycle = [make for make, weight in KINDS_OF_TASK for _ in range(weight)]
    made = []
    for n in range(SIZES[split]):
        task, turns, wording = cycle[n % len(cycle)](rng, pool, n)
        task["id"] = f"{split}-{task['id']}"
        made.append((task, turns, wording))
    return made


def demonstrated(split: str, wording: str) -> bool:
    """Whether a task of `split` in `wording` comes with its reference play."""
    return split != "train" or wording not in UNDEMONSTRATED


def write(folder: Path) -> None:
    for split in SIZES:
        made = make_split(split)
        tasks = [task for task, _, _ in made]
        solutions = [
            {"id": t["id"], "turns": turns} for t, turns, wording in made if demonstrated(split, wording)
        ]
        for sub, rows in (("tasks", tasks), ("solutions", solutions)):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            (folder / sub / f"{split}.jsonl").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
