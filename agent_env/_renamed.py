"""Public names that were renamed: still found under the old name for a while, with a warning that
says the new one. The one place the rule lives: modules (`old_name`) and lazy packages
(`agent_env._lazy`) use it."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from typing import Any

from agent_env._errors import ArgumentTypeError


def warn_renamed(module: str, old: str, new: str) -> None:
    """Warn the caller (two frames up: past the `__getattr__` that was asked) that `old` is `new` now."""
    warnings.warn(
        f"{module}.{old} is renamed {new}: import {new} instead ({old} will be removed)",
        DeprecationWarning,
        stacklevel=3,
    )


def old_name(module: str, name: str, names: Mapping[str, str]) -> Any:
    """What a module's `__getattr__` answers for `name`: the new name's value, with a warning, when
    `name` is an old one of `names` (old -> new); otherwise the usual AttributeError. The module
    imports this only then, so its own import costs nothing more."""
    new = names.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warn_renamed(module, name, new)
    return getattr(sys.modules[module], new)


def renamed_arguments(function: str, given: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments a caller gave under old names (`given`), under their new ones (old -> new),
    each warned about; any other is the TypeError Python would raise."""
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ArgumentTypeError(f"{function}() got an unexpected keyword argument '{unknown[0]}'")
    for old in given:
        new = names[old]
        warnings.warn(
            f"{function}({old}=...) is renamed {new}: pass {new} instead ({old} will be removed)",
            DeprecationWarning,
            stacklevel=3,
        )
    return {names[old]: value for old, value in given.items()}
