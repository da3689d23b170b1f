"""The rules every tool and argument name follows, so that any trainer and chat template can call it.

They live here once: the core checks a bundle's tools by them when it loads, and the trainer's side
checks by them the tools a server lists (which may not be ours) before it makes methods of them.
"""

from __future__ import annotations

import keyword
import re
from typing import Literal

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

TRAINER_METHODS = frozenset({"reset", "get_reward", "end_turn"})
"""The methods of the trainer's generated class besides the tools: no tool may take their names."""

RESERVED_NAMES = TRAINER_METHODS | {"bash"}
"""Names the framework uses itself: the trainer's class methods, and the sandbox's tool."""


def name_problem(
    name: str,
    *,
    kind: Literal["tool", "argument"] = "tool",
    what: str | None = None,
    reserved: frozenset[str] = RESERVED_NAMES,
) -> str | None:
    """Why `name` cannot name a tool (or an argument), with the fix; None when it can.

    `what` is how the message names it (default: `tool 'name'`); `reserved` the tool names taken.
    """
    what = what or f"{kind} '{name}'"
    if not IDENTIFIER.match(name):
        return f"{what} is not a name a trainer can call (it must match {IDENTIFIER.pattern}); rename it"
    if keyword.iskeyword(name):
        return f"{what} is a Python keyword, which no trainer can call; rename it"
    if kind == "tool" and name.startswith("_"):
        return f"{what} starts with '_', and TRL never offers such methods as tools; rename it"
    if kind == "tool" and name in reserved:
        return f"{what} is reserved ({', '.join(sorted(reserved))}); rename it"
    if kind == "argument" and name == "self":
        return f"{what} would clash with the method's receiver; rename it"
    return None
