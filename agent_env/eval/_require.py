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


LOCAL_MODEL_INSTALL = "pip install trl torch"


def require_local_model() -> None:
    """Raise ImportError naming what to install when the local model's packages are missing.

    torch and TRL are the trainer's to pin, so the `eval` extra does not bring them; TRL brings
    transformers.
    """
    missing = []
    for name in ("torch", "transformers", "trl"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ImportError(
            f"a local model needs {', '.join(missing)}, not installed here: {LOCAL_MODEL_INSTALL} "
            "(the versions your trainer pins)"
        )
