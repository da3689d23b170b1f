"""The `eval` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

from agent_env._extras import require_modules

INSTALL = "pip install 'agentenv-framework[eval]'"
LOCAL_MODEL_INSTALL = "pip install trl torch"


def require_eval_extra() -> None:
    """Raise ImportError naming `[eval]` when a package the extra brings is missing."""
    require_modules(("openai", "openenv", "datasets", "httpx"), needed_by="agent_env.eval", install=INSTALL)


def require_local_model() -> None:
    """Raise ImportError naming what to install when the local model's packages are missing.

    torch and TRL are the trainer's to pin, so the `eval` extra does not bring them; TRL brings
    transformers.
    """
    require_modules(
        ("torch", "transformers", "trl"),
        needed_by="a local model",
        install=f"{LOCAL_MODEL_INSTALL} (the versions your trainer pins)",
    )
