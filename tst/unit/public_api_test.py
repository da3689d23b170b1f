"""Public and private by construction: every module of agent_env is private (`_name.py`) but the
packages and the public modules named here; each of those has an `__all__` that is exactly its public
names, nothing public left out of it, nothing in it that it lacks; and the examples use only those
names, as the bench does outside the benchmarks of a private primitive.

A package's public names are what `dir()` shows of it without a leading `_`, less its submodules
(attributes only because they were imported) and `from __future__ import annotations`. `dir()` and
`getattr()`, not the module's `__dict__`, so that a lazy package (PEP 562 `__getattr__` and
`__dir__`) is held to the same rule. A package without `__all__` exports nothing.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

import agent_env
from tst.util import capabilities

ROOT = Path(agent_env.__file__).parent
REPOSITORY = ROOT.parent
PUBLIC_MODULES = {
    "agent_env.testing": "fakes for a user's own tests of what stands on episodes",
}
"""Modules a user imports that are not packages, each with why."""
RUN_ONLY = {"agent_env.cli.__main__": "`python -m agent_env.cli`: run, never imported"}
BENCH_OF_PRIVATE_PRIMITIVES = {
    "bench/commands.py": "the way commands ran before, rebuilt from the sandboxes' own parts",
    "bench/sandboxes.py": "the Docker sandbox's file copy against the way before",
    "bench/threads.py": "agent_env's own thread pool and client loop against the standard library's",
    "bench/serve.py": "the server under uvicorn with the connection guard `agent-env serve` runs",
    "bench/harbor_dataset.py": "replays at the concurrency `agent-env replay` defaults to",
}
"""Benchmarks that measure a private part, which they import, each with what it measures."""
METADATA = {"__version__"}
"""Dunder names a package may list in `__all__` (and must, when it defines them)."""
NOT_AN_API = {
    "agent_env.cli": "the agent-env command: its one entry point is `main`, the console script's",
}
NEEDS_EXTRA = ("agent_env.openenv", "agent_env.training.trl")
NEEDS_ALL = ("agent_env", "agent_env.eval", "agent_env.mcp")
"""Packages whose names are loaded from modules of the extras (the package lazily, eval and mcp whole)."""


def modules() -> list[str]:
    """Every module of agent_env (a package as its name), found on disk so that collecting this file
    imports none of them."""
    found = (path.relative_to(REPOSITORY).with_suffix("").parts for path in ROOT.rglob("*.py"))
    return sorted(".".join(parts).removesuffix(".__init__") for parts in found)


def is_private(module: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


def packages() -> list[str]:
    """Every package of agent_env, found on disk so that collecting this file imports none of them."""
    found = (init.parent.relative_to(REPOSITORY).parts for init in ROOT.rglob("__init__.py"))
    return sorted(".".join(parts) for parts in found if ".".join(parts) not in NOT_AN_API)


def apis() -> list[str]:
    """What a user imports: the packages and the public modules."""
    return [*packages(), *PUBLIC_MODULES]


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
    """A package's public names; a public module's are those it defines, not what it imports."""
    shown = set(dir(package))
    names = {name for name in shown if not name.startswith("_")} | (METADATA & shown)
    if not hasattr(package, "__path__"):
        names &= defined_in(Path(str(package.__file__)))
    return {name for name in names if not not_an_export(package, name)}


def defined_in(path: Path) -> set[str]:
    """The names a module's source defines at its top level (not those it imports)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names - {"__all__"}


PACKAGES = [checked(name) for name in apis()]


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


def test_every_module_but_the_packages_and_the_public_modules_named_here_is_private() -> None:
    public = [name for name in modules() if not is_private(name) and name not in [*packages(), *NOT_AN_API]]

    assert sorted(set(public) - set(PUBLIC_MODULES) - set(RUN_ONLY)) == [], (
        "name the module _NAME.py (a package's __all__ exports what users need of it), "
        "or add it to PUBLIC_MODULES saying why a user imports it"
    )
    assert sorted(set(PUBLIC_MODULES) - set(public)) == [], "a public module named here is gone"


def agent_env_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """Each import of agent_env in a file: its line, the module, and the name taken from it (None for
    `import agent_env.x`)."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "agent_env"
        ):
            found += [(node.lineno, node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, alias.name, None)
                for alias in node.names
                if alias.name.split(".")[0] == "agent_env"
            ]
    return found


def non_public_imports(folder: str, allowed: dict[str, str]) -> list[str]:
    """Each import in `folder`'s Python files of a name no public module exports, but in `allowed`."""
    found = []
    for path in sorted((REPOSITORY / folder).rglob("*.py")):
        relative = path.relative_to(REPOSITORY).as_posix()
        if relative in allowed:
            continue
        for line, module, name in agent_env_imports(path):
            where = f"{relative}:{line}: {module}" + (f" import {name}" if name else "")
            if is_private(module) or module not in apis():
                found.append(f"{where} (a private module)")
            elif name is not None and name not in getattr(importlib.import_module(module), "__all__", []):
                found.append(f"{where} (not in its __all__)")
    return found


@pytest.mark.needs(*capabilities.PACKAGE_EXTRAS)
def test_the_examples_import_only_names_a_package_or_public_module_exports() -> None:
    assert non_public_imports("examples", {}) == []


@pytest.mark.needs(*capabilities.PACKAGE_EXTRAS)
def test_the_bench_imports_only_exported_names_but_in_the_benchmarks_of_a_private_primitive() -> None:
    assert non_public_imports("bench", BENCH_OF_PRIVATE_PRIMITIVES) == []


def test_each_benchmark_of_a_private_primitive_does_import_one() -> None:
    needless = [
        name
        for name in BENCH_OF_PRIVATE_PRIMITIVES
        if not any(is_private(module) for _, module, _ in agent_env_imports(REPOSITORY / name))
    ]

    assert needless == [], "it imports nothing private: take it out of BENCH_OF_PRIVATE_PRIMITIVES"


@pytest.mark.needs(*capabilities.PACKAGE_EXTRAS)
def test_every_package_and_public_module_that_exports_a_name_has_its_page_in_the_api_reference() -> None:
    exporting = {
        name
        for name in apis()
        if not is_private(name) and getattr(importlib.import_module(name), "__all__", [])
    }
    pages = " ".join(
        path.read_text(encoding="utf-8") for path in (REPOSITORY / "docs" / "reference" / "api").glob("*.md")
    )
    shown = set(re.findall(r"<!-- api (\S+) -->", pages)) | set(
        re.findall(r"^::: (\S+)", pages, re.MULTILINE)
    )

    assert sorted(exporting - shown) == [], "add `<!-- api NAME -->` to a page of docs/reference/api/"
