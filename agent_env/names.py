"""The rules every tool and argument name follows, so that any trainer and chat template can call it."""

from __future__ import annotations

import keyword
import re

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

RESERVED_NAMES = frozenset({"reset", "get_reward", "end_turn", "bash"})
"""Names the framework uses itself: the trainer's class methods, the turn's end, the sandbox's tool."""


def name_problem(name: str, *, kind: str = "tool", reserved: bool = True) -> str | None:
    """Why `name` cannot name a tool or an argument, or None when it can."""
    if not _IDENTIFIER.match(name):
        return f"{kind} '{name}' must match ^[A-Za-z_][A-Za-z0-9_]*$; rename it"
    if keyword.iskeyword(name):
        return f"{kind} '{name}' is a Python keyword; rename it"
    if reserved and name in RESERVED_NAMES:
        return f"{kind} '{name}' is reserved ({', '.join(sorted(RESERVED_NAMES))}); rename it"
    return None
