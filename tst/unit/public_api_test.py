"""Each package's public API is exactly what its `__all__` says: nothing public left out of it, nothing
in it that the package lacks.

A package's public names are what `dir()` shows of it without a leading `_`, less its submodules
(attributes only because they were imported) and `from __future__ import annotations`. `dir()` and
`getattr()`, not the module's `__dict__`, so that a lazy package (PEP 562 `__getattr__` and
`__dir__`) is held to the same rule. A package without `__all__` exports nothing.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

import agent_env
from tst.util import capabilities

ROOT = Path(agent_env.__file__).parent
METADATA = {"__version__"}
"""Dunder names a package may list in `__all__` (and must, when it defines them)."""
NOT_AN_API = {
    "agent_env.cli": "the agent-env command: its one entry point is `main`, the console script's",
}
NEEDS_EXTRA = ("agent_env.openenv", "agent_env.training.trl")
NEEDS_ALL = ("agent_env", "agent_env.eval", "agent_env.mcp")
"""Packages whose names are loaded from modules of the extras (the package lazily, eval and mcp whole)."""


def packages() -> list[str]:
    """Every package of agent_env, found on disk so that collecting this file imports none of them."""
    found = (init.parent.relative_to(ROOT.parent).parts for init in ROOT.rglob("__init__.py"))
    return sorted(".".join(parts) for parts in found if ".".join(parts) not in NOT_AN_API)


def checked(name: str) -> pytest.ParameterSet:
    marks = [pytest.mark.needs("openenv_installed")] if name.startswith(NEEDS_EXTRA) else []
    if name in NEEDS_ALL:
        marks = [pytest.mark.needs(*capabilities.PACKAGE_EXTRAS)]
    return pytest.param(name, marks=marks, id=name)


def not_an_export(package: ModuleType, name: str) -> bool:
    """Whether `name` is on `package` only because of how it imports: a submodule of it, or the
    `annotations` of `from __future__ import annotations`."""
    value = getattr(package, name)
    if isinstance(value, ModuleType):
        return value.__name__ == f"{package.__name__}.{name}"
    return type(value).__module__ == "__future__"


def public_names(package: ModuleType) -> set[str]:
    shown = set(dir(package))
    names = {name for name in shown if not name.startswith("_")} | (METADATA & shown)
    return {name for name in names if not not_an_export(package, name)}


PACKAGES = [checked(name) for name in packages()]


@pytest.mark.parametrize("name", PACKAGES)
def test_a_package_s_all_is_exactly_the_public_names_it_has(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(getattr(package, "__all__", []))

    assert sorted(set(exported) - public_names(package)) == [], "in __all__ but not public in the package"
    assert sorted(public_names(package) - set(exported)) == [], "public in the package but not in __all__"
    assert len(set(exported)) == len(exported), "named twice in __all__"


@pytest.mark.parametrize("name", PACKAGES)
def test_every_name_in_a_package_s_all_can_be_got_from_the_package(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(getattr(package, "__all__", []))

    def missing(attribute: str) -> bool:
        try:
            getattr(package, attribute)
        except AttributeError:
            return True
        return False

    assert [attribute for attribute in exported if missing(attribute)] == []


def test_the_packages_checked_include_the_core_and_both_extras() -> None:
    expected = {"agent_env", "agent_env.sandbox", "agent_env.openenv", "agent_env.training.trl"}

    assert expected <= set(packages())
