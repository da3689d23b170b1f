"""`agent_env`'s imports, read statically (ast) from each module's source: what the import tests check.

Every import statement counts: at the top, inside a function, under `if TYPE_CHECKING:`; a relative one
is resolved; `from agent_env.x import name` where `agent_env.x.name` is a module imports that submodule,
else it imports `agent_env.x`. So does `importlib.import_module("agent_env.x")` with a literal name: an
import written as a call is still an edge. A package's `__init__` is the package. A lazy package
(`agent_env._lazy`) is a package like any other: the imports under its `if TYPE_CHECKING:` are import
statements and count (type checkers follow them), the strings of its lazy map are not and do not.
Importing `a.b.c` is an edge to `a.b.c` alone: that Python runs the parents' `__init__` first is not a
dependency of the importer on them.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Set
from pathlib import Path

import agent_env

PACKAGE = Path(agent_env.__file__).parent


def modules_of(root: Path) -> dict[str, Path]:
    """Module name -> source file, for the package at `root` (a package's `__init__` named as the package)."""
    found = {}
    for source in sorted(root.rglob("*.py")):
        parts = source.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = source
    return found


def imported_names(name: str, source: Path) -> Iterator[tuple[str, str | None]]:
    """Each import of `name`'s source as (module, name imported from it or None), relative ones resolved."""
    package = name if source.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = str(node.module)
            yield from ((target, alias.name) for alias in node.names)
        elif _imports_by_call(node):
            yield node.args[0].value, None  # type: ignore[attr-defined]


def _imports_by_call(node: ast.AST) -> bool:
    """Whether `node` is `importlib.import_module("literal")` (or `import_module("literal")`)."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return False
    called = node.func
    named = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", None)
    return named == "import_module" and isinstance(node.args[0].value, str)


def imported_by(name: str, source: Path, modules: Set[str]) -> set[str]:
    """The modules of `modules` that `name`'s source imports, by any import anywhere in it."""
    imported: set[str] = set()
    for target, alias in imported_names(name, source):
        submodule = f"{target}.{alias}"
        if alias is not None and submodule in modules:
            imported.add(submodule)
        elif target in modules:
            imported.add(target)
    imported.discard(name)
    return imported


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = modules_of(root)
    return {name: imported_by(name, source, modules.keys()) for name, source in modules.items()}


def third_party_imports(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the top-level names of the modules it imports from outside the package and the
    standard library."""
    own = root.name
    found: dict[str, set[str]] = {}
    for name, source in modules_of(root).items():
        tops = {target.split(".")[0] for target, _ in imported_names(name, source)}
        found[name] = {top for top in tops if top not in sys.stdlib_module_names | {own, "__future__", ""}}
    return found
