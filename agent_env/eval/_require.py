"""The `eval` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

import importlib

INSTALL = "pip install 'agentenv-framework[eval]'"


def require_eval_extra() -> None:
    """Raise ImportError naming `[eval]` when a package the extra brings is missing."""
    missing = []
    for name in ("openai", "openenv", "datasets", "httpx"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ImportError(f"agent_env.eval needs {', '.join(missing)}, not installed here: {INSTALL}")
