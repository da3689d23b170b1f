"""The nearest of some names to one that is not among them: how every "did you mean" is worded."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

NEAR = 0.75
"""How alike (difflib's ratio) a choice must be to be offered: a typo or a plural (`add_crates`, 0.95),
not a different word that shares a suffix (`paint_crate` and `list_crates`, 0.64)."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the choice nearest to `name`, or nothing when none is near."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=NEAR)
    return f"; did you mean '{close[0]}'?" if close else ""
