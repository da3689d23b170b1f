"""Public names that were renamed: still found under the old name for a while, with a warning that
says the new one. The one place the rule lives: modules and lazy packages both use `renamed`."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def warn_renamed(module: str, old: str, new: str) -> None:
    """Warn the caller (two frames up: past the `__getattr__` that was asked) that `old` is `new` now."""
    warnings.warn(
        f"{module}.{old} is renamed {new}: import {new} instead ({old} will be removed)",
        DeprecationWarning,
        stacklevel=3,
    )


def renamed(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that answers each old name of `names` (old -> new) with the new name's
    value, warning; any other name is the usual AttributeError."""

    def attribute(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_renamed(module, name, new)
        return getattr(sys.modules[module], new)

    return attribute
