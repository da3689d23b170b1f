"""Lazy packages (`agent_env._lazy`): `agent_env` and its lazy subpackages load a name's module when it
is first used, list each export once (their `__all__` is the lazy map's), and name for type checkers
exactly what they load, as explicit re-exports."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import pytest

import agent_env
import agent_env.eval
import agent_env.mcp
import agent_env.openenv
import agent_env.users

pytestmark = pytest.mark.needs("eval_installed")

LAZY_PACKAGES = [agent_env, agent_env.openenv, agent_env.eval, agent_env.mcp, agent_env.users]


def python(code: str) -> str:
    """What `code` prints, run by a fresh interpreter of this environment; fails if it fails."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def type_checking_imports(package: types.ModuleType) -> dict[str, str]:
    """Name -> module, as the package's imports under `if _typing.TYPE_CHECKING:` say; a name imported
    without `as` itself is not re-exported for a strict type checker, so it is left out."""
    tree = ast.parse(Path(str(package.__file__)).read_text())
    guarded = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "_typing.TYPE_CHECKING"
    )
    return {
        alias.name: str(node.module)
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    }


@pytest.mark.parametrize("package", LAZY_PACKAGES, ids=lambda p: p.__name__)
def test_a_lazy_package_names_for_type_checkers_exactly_what_it_loads_on_use(
    package: types.ModuleType,
) -> None:
    loaded_on_use = package.__dict__["_exports"]

    assert type_checking_imports(package) == loaded_on_use
    assert set(package.__all__) - {"__version__"} == set(loaded_on_use)


def test_the_package_s_all_is_its_lazy_map_and_its_own_names_each_listed_once() -> None:
    assert agent_env.__all__ == sorted([*agent_env.__dict__["_exports"], "__version__"])
    assert len(set(agent_env.__all__)) == len(agent_env.__all__)


@pytest.mark.parametrize("package", LAZY_PACKAGES, ids=lambda p: p.__name__)
def test_a_lazy_package_lists_every_export_and_refuses_a_name_it_lacks(package: types.ModuleType) -> None:
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match=f"module '{package.__name__}' has no attribute 'load_bundel'"):
        _ = package.load_bundel
