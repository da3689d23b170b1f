"""The `openenv` extra's import check: fail at import, with the line that installs it."""

from __future__ import annotations

import importlib.metadata

from agent_env._extras import install_line

INSTALL = install_line("openenv")
SUPPORTED = "0.10"


def require_openenv() -> None:
    """Raise ImportError naming the install line when OpenEnv 0.10 is missing or another version."""
    try:
        import openenv  # noqa: F401  (cheap: OpenEnv loads its parts lazily)
    except ImportError:
        raise ImportError(
            f"agent_env.openenv needs OpenEnv {SUPPORTED}, which is not installed: {INSTALL}"
        ) from None
    try:
        version = importlib.metadata.version("openenv")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            "agent_env.openenv needs the `openenv` distribution, not `openenv-core`: "
            f"pip uninstall openenv-core; {INSTALL}"
        ) from None
    if not (version == SUPPORTED or version.startswith(f"{SUPPORTED}.")):
        raise ImportError(f"agent_env.openenv needs OpenEnv {SUPPORTED}.*, found {version}: {INSTALL}")
