"""Writes the helpdesk's tasks and their reference plays, the same every time.

    python examples/helpdesk/generate.py [OUT_FOLDER]

A family of two-step tasks: look a customer up by name, then act on what the lookup answered (unlock
the account it names, or refund the order it names), then reply with that username or order number.
Nothing in the prompt gives the username or the order number: a model that acts before it has read
the lookup's answer can only guess it. Each task scores partial credit: the right lookup (1/4), the
right action on the looked-up value with nothing else changed (2/4), a reply naming the value (1/4).
Each kind of task comes in several wordings. The train split's reference plays are of mixed quality,
as logs of people's work are: half of them reply `TERSE`, naming no value, and score 3/4 (their
`expected_score`), so only reinforcement learning teaches a model always to name it. The eval split
is held out: its customers' full names, and every username and order number of its tasks, never
appear in the train split (each first name and surname does, in other pairs). The generator is
seeded, so the committed files can be checked by running this again (the unit tests do). Each
reference play scores its expected score; doing nothing scores 0.0.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Task = dict[str, Any]
Play = dict[str, Any]
Made = tuple[Task, Play, str]
"""A task, its reference play (a line of solutions/SPLIT.jsonl but its id), and its wording."""

FIRST = ("Ada", "Bruno", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira")
FIRST += ("Lena",)
LAST = ("Quint", "Ross", "Stone", "Tal", "Ueda", "Voss", "Wren", "Yates", "Zorn", "Moss", "Nagy", "Pike")
SEED = 45
SIZES = {"train": 160, "eval": 48}
EVAL_SHARE = 0.3
"""The share of all full names, and of all numbers, kept for the eval split."""
WEIGHTS = {"lookup": 1.0, "action": 2.0, "reply": 1.0}
TERSE = "Done."
TERSE_SHARE = 0.5
"""The share of the train split's reference plays that reply `TERSE`, naming no value: they score 3/4."""

WORDINGS: dict[str, tuple[str, ...]] = {
    "unlock": (
        "{name} is locked out. Unlock their account.",
        "Please unlock the account of {name}.",
        "Unlock {name}'s account and tell me the username.",
        "{name} cannot log in: the account is locked. Unlock it.",
    ),
    "refund": (
        "Refund the order of {name}.",
        "Please refund {name}'s order.",
        "{name} sent their order back: refund it and tell me the order number.",
        "{name} wants their money back. Refund their order.",
    ),
}
KINDS = {
    "unlock": ("find_user", "unlock_account", "username", "Unlocked {value}."),
    "refund": ("find_order", "refund_order", "order", "Refunded order {value}."),
}
"""Per kind of task: the lookup tool, the action tool, the action's argument, and the reply."""


def names() -> dict[str, list[str]]:
    """Every full name, shuffled once and cut into the train split's and the eval split's."""
    every = [f"{first} {last}" for first, last in itertools.product(FIRST, LAST)]
    random.Random(SEED).shuffle(every)
    cut = int(len(every) * EVAL_SHARE)
    return {"eval": sorted(every[:cut]), "train": sorted(every[cut:])}


def numbers() -> dict[str, list[int]]:
    """Every four-digit number, shuffled once and cut as the names are: usernames and order numbers."""
    every = list(range(1000, 10000))
    random.Random(f"{SEED}-numbers").shuffle(every)
    cut = int(len(every) * EVAL_SHARE)
    return {"eval": every[:cut], "train": every[cut:]}


def _customers(rng: random.Random, split: str, count: int) -> list[dict[str, Any]]:
    """`count` customers of `split`, each with an account (locked or not) and an order (refunded or not)."""
    picked = rng.sample(names()[split], count)
    digits = rng.sample(numbers()[split], 2 * count)
    return [
        {
            "name": name,
            "username": f"u{digits[2 * n]}",
            "order": f"{digits[2 * n + 1]}",
            "locked": rng.random() < 0.5,
            "refunded": rng.random() < 0.5,
        }
        for n, name in enumerate(picked)
    ]


def _seed(customers: list[dict[str, Any]]) -> dict[str, Any]:
    accounts = [{"username": c["username"], "name": c["name"], "locked": c["locked"]} for c in customers]
    orders = [{"order": c["order"], "customer": c["name"], "refunded": c["refunded"]} for c in customers]
    return {"desk": {"accounts": accounts, "orders": orders}}


def _after(customers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The desk's items once the task is done (the task's customer is the first)."""
    accounts = sorted(({"username": c["username"], "locked": c["locked"]} for c in customers), key=str)
    orders = sorted(({"order": c["order"], "refunded": c["refunded"]} for c in customers), key=str)
    return accounts + orders


def make(kind: str) -> Callable[[random.Random, str, int], Made]:
    lookup, action, argument, reply = KINDS[kind]

    def one(rng: random.Random, split: str, n: int) -> Made:
        customers = _customers(rng, split, rng.randint(1, 3))
        customer = customers[0]
        state, done = ("locked", False) if kind == "unlock" else ("refunded", True)
        customer[state] = not done
        seed = _seed(customers)
        customer[state] = done
        value = customer[argument]
        wording = rng.choice(WORDINGS[kind])
        task = {
            "id": f"{split}-{kind}-{n:03d}",
            "agent": "agent",
            "turns": [wording.format(name=customer["name"])],
            "seed": seed,
            "verifiers": [
                {
                    "type": "function",
                    "function": "looked_up",
                    "args": {"tool": lookup, "name": customer["name"]},
                    "weight": WEIGHTS["lookup"],
                },
                {"type": "items", "env": "desk", "expected": _after(customers), "weight": WEIGHTS["action"]},
                {"type": "reply", "contains": value, "weight": WEIGHTS["reply"]},
            ],
        }
        calls = [
            {"tool": lookup, "arguments": {"name": customer["name"]}},
            {"tool": action, "arguments": {argument: value}},
        ]
        if split == "train" and rng.random() < TERSE_SHARE:
            terse = 1 - WEIGHTS["reply"] / sum(WEIGHTS.values())
            return task, {"turns": [{"calls": calls, "reply": TERSE}], "expected_score": terse}, wording
        return task, {"turns": [{"calls": calls, "reply": reply.format(value=value)}]}, wording

    return one


def make_split(split: str) -> list[Made]:
    """Every task of `split`, with its reference play and wording: unlock and refund, in turn."""
    rng = random.Random(f"{SEED}-{split}")
    makers = [make(kind) for kind in KINDS]
    return [makers[n % len(makers)](rng, split, n) for n in range(SIZES[split])]


def write(folder: Path) -> None:
    for split in SIZES:
        made = make_split(split)
        rows = {
            "tasks": [task for task, _, _ in made],
            "solutions": [{"id": task["id"], **play} for task, play, _ in made],
        }
        for sub, lines in rows.items():
            (folder / sub).mkdir(parents=True, exist_ok=True)
            text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
            (folder / sub / f"{split}.jsonl").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
