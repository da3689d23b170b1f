"""How many of a dataset's jobs run at once when the caller does not say: image builds at load, and
`replay`'s plays.

Both mostly wait on the Docker engine (its containers' starts, a build's commits and downloads), so
twice the cores this process may use keeps the cores busy without a queue of work in the engine;
eight at most, so that a big machine does not start dozens of builds against one engine at once.
"""

from __future__ import annotations

import os

from agent_env._positive import positive_count

MOST = 8
BUILD_CONCURRENCY_VARIABLE = "AGENTENV_BUILD_CONCURRENCY"
"""The environment variable that sets the builds at once when no argument or option does."""


def cores() -> int:
    """The CPUs this process may run on (its affinity, where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS: no affinity
        return os.cpu_count() or 1


def default_concurrency() -> int:
    """Twice the cores, at least 2 and at most `MOST`."""
    return max(2, min(MOST, 2 * cores()))


def build_concurrency(given: int | None = None) -> int:
    """The image builds to run at once: `given`, else `AGENTENV_BUILD_CONCURRENCY`, else the default."""
    return positive_count(
        given,
        name="build_concurrency",
        variable=BUILD_CONCURRENCY_VARIABLE,
        default=default_concurrency(),
        or_else=" (this machine's default), or unset it",
    )
