"""The `eval` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

from agent_env._extras import install_line, require_modules

INSTALL = install_line("eval")
LOCAL_MODEL_INSTALL = "pip install trl torch"


def require_eval_extra() -> None:
    """Raise ImportError naming `[eval]` when a package the extra brings is missing (`OpenAIPolicy`'s
    check: openai is the one the other policies and the player do without)."""
    require_modules(("openai", "openenv", "datasets", "httpx"), needed_by="agent_env.eval", install=INSTALL)


def require_player() -> None:
    """Raise ImportError naming `[eval]` when a package the player needs (the `trl` extra's client) is
    missing: the package's check."""
    require_modules(("openenv", "datasets", "httpx"), needed_by="agent_env.eval", install=INSTALL)


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
