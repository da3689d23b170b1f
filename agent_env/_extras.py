"""Each extra's import check: fail at import, naming what is missing and the line that installs it."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable

DISTRIBUTION = "agentenv-framework"


def install_line(extra: str) -> str:
    """The line that installs the extra called `extra`, as an error that needs it says."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def installed(name: str) -> bool:
    """Whether the module `name` is there to import, without importing it (a bundle's load asks, for
    what its envs and users will need)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is not a package; an entry blocked in sys.modules
        return False


def require_modules(names: Iterable[str], *, needed_by: str, install: str) -> None:
    """Raise ImportError, saying `needed_by` needs them and how to `install` them, when any of the
    modules `names` does not import here."""
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ImportError(f"{needed_by} needs {', '.join(missing)}, not installed here: {install}")
