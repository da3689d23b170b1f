"""The `users` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

from agent_env._extras import install_line, require_modules

INSTALL = install_line("users")


def require_users_extra() -> None:
    """Raise ImportError naming `[users]` when the `openai` client a chat model's user needs is missing."""
    require_modules(("openai",), needed_by="a simulated user played by a chat model", install=INSTALL)
