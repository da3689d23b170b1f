"""A count a caller gives as an argument or, when it does not, as an environment variable: one rule
for both ways in, and one wording of what is wrong with either."""

from __future__ import annotations

import os

from agent_env._errors import ArgumentError


def positive_count(given: int | None, *, name: str, variable: str, default: int, or_else: str) -> int:
    """`given`, else the integer in the environment variable `variable`, else `default`.

    An argument that is no positive integer (a bool neither) names `name`; a variable that holds none
    names the variable, suggests `default` and then `or_else` (what else fixes it).
    """
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int) or given < 1:
            raise ArgumentError(f"{name} must be a positive integer, got {given!r}")
        return given
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ArgumentError(
            f"{variable} must be a positive integer, got {raw!r}: set it to, say, {default}{or_else}"
        )
    return value
