"""Writes the wharf's tasks and their reference plays, the same every time.

    python examples/wharf/generate.py [OUT_FOLDER]

Every task comes from a seeded random generator, so the committed files can be checked by running
this again (the unit tests do). Each kind of task has a reference play that scores 1.0; doing
nothing scores 0.0 on every task.
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
Made = tuple[Task, list[Turn]]

KINDS = ("dry", "cold", "fragile")
FOODS = ("flour", "rice", "beans", "salt", "oats", "tea", "sugar", "lentils")


def _crates(rng: random.Random, count: int, taken: set[str]) -> list[dict[str, Any]]:
    crates = []
    per_bay: dict[int, int] = {}
    while len(crates) < count:
        label = f"C{rng.randint(10, 99)}"
        bay = rng.randint(1, 6)
        if label in taken or per_bay.get(bay, 0) >= 3:
            continue
        taken.add(label)
        per_bay[bay] = per_bay.get(bay, 0) + 1
        crates.append({"crate": label, "bay": bay, "kind": rng.choice(KINDS)})
    return crates


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def _together(calls: list[dict[str, Any]]) -> list[Any]:
    """Independent calls as one step, made together in one answer (a lone call is a step alone)."""
    return [calls] if len(calls) > 1 else calls


def _items(env: str, expected: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "items", "env": env, "expected": sorted(expected, key=json.dumps)}


def store_crate(rng: random.Random, n: int) -> Made:
    taken: set[str] = set()
    seed = _crates(rng, rng.randint(1, 4), taken)
    new = _crates(rng, 1, taken)[0]
    task = {
        "id": f"store-crate-{n:03d}",
        "agent": "deckhand",
        "turns": [
            f"Crate {new['crate']} has come ashore; it holds {new['kind']} goods. "
            f"Store it in bay {new['bay']}."
        ],
        "seed": {"dock": {"crates": seed}},
        "verifiers": [_items("dock", [*seed, new])],
    }
    return task, [
        {"calls": [_call("add_crate", **new)], "reply": f"Stored {new['crate']} in bay {new['bay']}."}
    ]


def move_crate(rng: random.Random, n: int) -> Made:
    seed = _crates(rng, rng.randint(2, 5), set())
    moved = rng.choice(seed)
    to_bay = rng.choice([b for b in range(1, 7) if b != moved["bay"]])
    after = [{**c, "bay": to_bay} if c is moved else c for c in seed]
    task = {
        "id": f"move-crate-{n:03d}",
        "agent": "deckhand",
        "turns": [f"Move crate {moved['crate']} to bay {to_bay}."],
        "seed": {"dock": {"crates": seed}},
        "verifiers": [_items("dock", after)],
    }
    return task, [{"calls": [_call("move_crate", crate=moved["crate"], to_bay=to_bay)], "reply": "Done."}]


def store_then_move(rng: random.Random, n: int) -> Made:
    taken: set[str] = set()
    seed = _crates(rng, rng.randint(1, 3), taken)
    new = _crates(rng, 1, taken)[0]
    to_bay = rng.choice([b for b in range(1, 7) if b != new["bay"]])
    task = {
        "id": f"store-then-move-{n:03d}",
        "agent": "deckhand",
        "turns": [
            f"A {new['kind']} crate labelled {new['crate']} is on the quay. Store it in bay {new['bay']}.",
            f"Change of plan: move the crate you just stored to bay {to_bay}.",
        ],
        "seed": {"dock": {"crates": seed}},
        "verifiers": [_items("dock", [*seed, {**new, "bay": to_bay}])],
    }
    return task, [
        {"calls": [_call("add_crate", **new)], "reply": "Stored."},
        {"calls": [_call("move_crate", crate=new["crate"], to_bay=to_bay)], "reply": "Moved."},
    ]


def count_bay(rng: random.Random, n: int) -> Made:
    seed = _crates(rng, rng.randint(3, 7), set())
    bay = rng.choice([c["bay"] for c in seed])
    count = sum(c["bay"] == bay for c in seed)
    task = {
        "id": f"count-bay-{n:03d}",
        "agent": "deckhand",
        "turns": [f"How many crates are in bay {bay}? Answer with the number alone."],
        "seed": {"dock": {"crates": seed}},
        "verifiers": [{"type": "reply", "equals": str(count)}],
    }
    return task, [{"calls": [_call("list_crates", bay=bay)], "reply": str(count)}]


def ship_with_leave(rng: random.Random, n: int) -> Made:
    seed = _crates(rng, rng.randint(2, 4), set())
    shipped = rng.choice(seed)
    task = {
        "id": f"ship-crate-{n:03d}",
        "agent": "deckhand",
        "turns": [f"The harbormaster lets you ship crate {shipped['crate']} today. Ship it out."],
        "seed": {"dock": {"crates": seed}},
        "modify_env_tool_access": [{"action": "enable", "role": "default", "tools": ["remove_crate"]}],
        "verifiers": [_items("dock", [c for c in seed if c is not shipped])],
    }
    return task, [{"calls": [_call("remove_crate", crate=shipped["crate"])], "reply": "Shipped."}]


def clear_bay(rng: random.Random, n: int) -> Made:
    seed = _crates(rng, rng.randint(3, 6), set())
    bay = rng.choice([c["bay"] for c in seed])
    gone = [c for c in seed if c["bay"] == bay]
    task = {
        "id": f"clear-bay-{n:03d}",
        "agent": "harbormaster",
        "turns": [f"Every crate in bay {bay} sails tonight. Ship them all out."],
        "seed": {"dock": {"crates": seed}},
        "verifiers": [_items("dock", [c for c in seed if c["bay"] != bay])],
    }
    return task, [
        {"calls": _together([_call("remove_crate", crate=c["crate"]) for c in gone]), "reply": "Bay cleared."}
    ]


def spread_out(rng: random.Random, n: int) -> Made:
    crowded = rng.randint(1, 6)
    seed = [{"crate": f"S{n:03d}{i}", "bay": crowded, "kind": rng.choice(KINDS)} for i in range(4)]
    free = [b for b in range(1, 7) if b != crowded]
    task = {
        "id": f"spread-out-{n:03d}",
        "agent": "deckhand",
        "turns": [f"Bay {crowded} is crammed. Move crates so that no bay holds more than two."],
        "seed": {"dock": {"crates": seed}},
        "verifiers": [{"type": "function", "function": "bays_at_most", "args": {"limit": 2}}],
    }
    calls = [
        _call("move_crate", crate=seed[0]["crate"], to_bay=free[0]),
        _call("move_crate", crate=seed[1]["crate"], to_bay=free[1]),
    ]
    return task, [{"calls": _together(calls), "reply": "Spread out."}]


def restock(rng: random.Random, n: int) -> Made:
    stock = {food: rng.randint(1, 9) for food in rng.sample(FOODS, rng.randint(1, 4))}
    food = rng.choice(FOODS)
    amount = rng.randint(2, 12)
    after = {**stock, food: stock.get(food, 0) + amount}
    task = {
        "id": f"restock-{n:03d}",
        "agent": "cook",
        "turns": [f"The supply boat brought {amount} units of {food}. Put them in the pantry."],
        "seed": {"pantry": {"stock": stock}},
        "verifiers": [_items("pantry", [{"item": k, "quantity": v} for k, v in after.items()])],
    }
    return task, [{"calls": [_call("add_item", item=food, quantity=amount)], "reply": "Stocked."}]


def cook_meal(rng: random.Random, n: int) -> Made:
    stock = {food: rng.randint(4, 12) for food in rng.sample(FOODS, 3)}
    used = {food: rng.randint(1, stock[food]) for food in rng.sample(sorted(stock), 2)}
    after = {k: v - used.get(k, 0) for k, v in stock.items()}
    recipe = " and ".join(f"{q} units of {f}" for f, q in used.items())
    task = {
        "id": f"cook-meal-{n:03d}",
        "agent": "cook",
        "turns": [f"Tonight's stew takes {recipe}. Take them out of the pantry."],
        "seed": {"pantry": {"stock": stock}},
        "verifiers": [_items("pantry", [{"item": k, "quantity": v} for k, v in after.items() if v > 0])],
    }
    return task, [
        {
            "calls": _together([_call("use_item", item=f, quantity=q) for f, q in used.items()]),
            "reply": "Cooking.",
        }
    ]


def unload_to_pantry(rng: random.Random, n: int) -> Made:
    seed = _crates(rng, rng.randint(1, 3), set())
    label = f"F{n:02d}"
    food = rng.choice(FOODS)
    amount = rng.randint(3, 10)
    task = {
        "id": f"unload-{n:03d}",
        "agent": "quartermaster",
        "turns": [
            f"A dry crate {label} with {amount} units of {food} is on the quay. Store the crate in bay 6, "
            f"then put its {amount} units of {food} in the pantry."
        ],
        "seed": {"dock": {"crates": seed}, "pantry": {"stock": {}}},
        "verifiers": [
            _items("dock", [*seed, {"crate": label, "bay": 6, "kind": "dry"}]),
            _items("pantry", [{"item": food, "quantity": amount}]),
        ],
        "aggregate": "all_pass",
    }
    calls = [
        _call("add_crate", crate=label, bay=6, kind="dry"),
        _call("add_item", item=food, quantity=amount),
    ]
    return task, [{"calls": _together(calls), "reply": "Unloaded."}]


def manifest_total(rng: random.Random, n: int) -> Made:
    rows = [(f"C{rng.randint(10, 99)}", rng.randint(5, 90)) for _ in range(rng.randint(3, 7))]
    total = sum(weight for _, weight in rows)
    manifest = "crate,weight\n" + "".join(f"{c},{w}\n" for c, w in rows)
    task = {
        "id": f"manifest-total-{n:03d}",
        "agent": "clerk",
        "turns": [
            "manifest.csv lists today's crates and their weights. Write their total weight, "
            "as a bare number, to total.txt."
        ],
        "files": {"manifest.csv": manifest},
        "verifiers": [{"type": "bash", "command": f'test "$(tr -d "[:space:]" < total.txt)" = "{total}"'}],
    }
    command = "awk -F, 'NR>1 {s += $2} END {print s}' manifest.csv > total.txt"
    return task, [{"calls": [_call("bash", command=command)], "reply": "Written."}]


KINDS_OF_TASK: tuple[Callable[[random.Random, int], Made], ...] = (
    store_crate,
    move_crate,
    store_then_move,
    count_bay,
    ship_with_leave,
    clear_bay,
    spread_out,
    restock,
    cook_meal,
    unload_to_pantry,
    manifest_total,
)


def make_split(seed: int, per_kind: int) -> tuple[list[Task], list[dict[str, Any]]]:
    rng = random.Random(seed)
    tasks, solutions = [], []
    for n in range(per_kind):
        for make in KINDS_OF_TASK:
            task, turns = make(rng, n + (100 if seed != 7 else 0))
            tasks.append(task)
            solutions.append({"id": task["id"], "turns": turns})
    return tasks, solutions


def write(folder: Path) -> None:
    for split, seed, per_kind in (("train", 7, 3), ("eval", 11, 1)):
        tasks, solutions = make_split(seed, per_kind)
        for sub, rows in (("tasks", tasks), ("solutions", solutions)):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            (folder / sub / f"{split}.jsonl").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
