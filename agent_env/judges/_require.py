"""The `judge` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

from agent_env._extras import install_line, require_modules

INSTALL = install_line("judge")


def require_judge_extra() -> None:
    """Raise ImportError naming `[judge]` when the `openai` client a judge verifier asks with is missing."""
    require_modules(("openai",), needed_by="a judge verifier", install=INSTALL)
