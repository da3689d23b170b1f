"""Each extra's import check: fail at import, naming what is missing and the line that installs it."""

from __future__ import annotations

import importlib
from collections.abc import Iterable


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
