"""Packages whose exports load on first use, so that importing one of their modules costs nothing more.

The trainer's side imports `agent_env._specs` and `agent_env.openenv`'s check of OpenEnv, which runs
`agent_env` and `agent_env.openenv` first: eager package inits would load the engine and the server
with them. A
lazy package names, module by module, what it exports (as TRL's `_import_structure` does); a name
is imported from its module when first read, then kept. The map is the one list of a package's exports
at run time (its `__all__` comes from it); type checkers read the same names from the package's
`import X as X` re-exports under `TYPE_CHECKING`, and a test checks the two agree.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Any


class _LazyPackage(types.ModuleType):
    _exports: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        module = self._exports.get(name)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._exports})


def lazy_exports(
    package: str,
    exports: Mapping[str, Sequence[str]],
    *,
    eager: Sequence[str] = (),
) -> None:
    """Make `package` (its `__name__`) load each name of `exports` (module -> names) when first read,
    and list them, with the names it defines itself (`eager`), as its `__all__`."""
    where = {name: module for module, names in exports.items() for name in names}
    target = sys.modules[package]
    target.__dict__["_exports"] = where
    target.__dict__["__all__"] = sorted([*where, *eager])
    target.__class__ = _LazyPackage
