"""The `trl` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

from agent_env._extras import install_line, require_modules

INSTALL = install_line("trl")


def require_trl_extra() -> None:
    """Raise ImportError naming `[trl]` when a package the extra brings is missing."""
    require_modules(
        ("openenv", "datasets", "httpx"),
        needed_by="agent_env.training.trl",
        install=f"{INSTALL} (TRL itself is yours to pin)",
    )
