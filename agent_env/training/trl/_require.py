"""The `trl` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

import importlib

INSTALL = "pip install 'agentenv-framework[trl]'"


def require_trl_extra() -> None:
    """Raise ImportError naming `[trl]` when a package the extra brings is missing."""
    missing = []
    for name in ("openenv", "datasets", "httpx"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ImportError(
            f"agent_env.training.trl needs {', '.join(missing)}, not installed here: {INSTALL} "
            "(TRL itself is yours to pin)"
        )
