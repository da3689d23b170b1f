"""No import circles in `agent_env`: its modules' imports read one way, beyond a known list that only shrinks.

The graph is read statically (ast) from each module's source. Every import statement counts: at the top,
inside a function, under `if TYPE_CHECKING:`; a relative one is resolved; `from agent_env.x import name`
where `agent_env.x.name` is a module imports that submodule, else it imports `agent_env.x`. A package's
`__init__` is the package. A lazy package (`agent_env._lazy`) is a package like any other: the imports
under its `if TYPE_CHECKING:` are import statements and count (type checkers follow them), the strings of
its lazy map are not and do not. Importing `a.b.c` is an edge to `a.b.c` alone: that Python runs the
parents' `__init__` first is not a dependency of the importer on them.
"""

from __future__ import annotations

import ast
import importlib
from collections import deque
from collections.abc import Iterator, Mapping, Set
from pathlib import Path

import agent_env

PACKAGE = Path(agent_env.__file__).parent

KNOWN: dict[frozenset[str], str] = {}
"""Today's circles, each with why it is still there; a circle not listed fails, and so does one listed
that is gone, so the list only shrinks. It is empty: keep it so."""


def modules_of(root: Path) -> dict[str, Path]:
    """Module name -> source file, for the package at `root` (a package's `__init__` named as the package)."""
    found = {}
    for source in sorted(root.rglob("*.py")):
        parts = source.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = source
    return found


def imported_by(name: str, source: Path, modules: Set[str]) -> set[str]:
    """The modules of `modules` that `name`'s source imports, by any import statement anywhere in it."""
    package = name if source.name == "__init__.py" else name.rpartition(".")[0]
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = str(node.module)
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in modules:
                    imported.add(submodule)
                elif target in modules:
                    imported.add(target)
    imported.discard(name)
    return imported


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = modules_of(root)
    return {name: imported_by(name, source, modules.keys()) for name, source in modules.items()}


def strongly_connected(graph: Mapping[str, Set[str]]) -> list[frozenset[str]]:
    """The components of more than one module (Tarjan's, iterative): each is a circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[frozenset[str]] = []

    def visit(module: str) -> tuple[str, Iterator[str]]:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        return module, iter(sorted(graph[module]))

    for start in sorted(graph):
        if start in index:
            continue
        work = [visit(start)]
        while work:
            module, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    work.append(visit(successor))
                    break
                if successor in on_stack:
                    low[module] = min(low[module], index[successor])
            else:
                work.pop()
                if work:
                    caller = work[-1][0]
                    low[caller] = min(low[caller], low[module])
                if low[module] == index[module]:
                    component = set()
                    while (member := stack.pop()) != module:
                        on_stack.discard(member)
                        component.add(member)
                    on_stack.discard(module)
                    component.add(module)
                    if len(component) > 1:
                        components.append(frozenset(component))
    return components


def circle(component: frozenset[str], graph: Mapping[str, Set[str]]) -> str:
    """A shortest way round `component` from its first module, as `a -> b -> a`, then every module in it."""
    start = min(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        if start in graph[module]:
            path = [module]
            while path[-1] != start:
                path.append(came_from[path[-1]])
            way = " -> ".join([*reversed(path), start])
            return f"{way}  (all of: {', '.join(sorted(component))})"
        for successor in sorted(graph[module] & component):
            if successor not in came_from and successor != start:
                came_from[successor] = module
                queue.append(successor)
    raise AssertionError(f"{sorted(component)} is not a circle")


def write(root: Path, files: Mapping[str, str]) -> Path:
    """A package made of `files` (relative path -> source) under `root`; its folder."""
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root / next(iter(files)).split("/")[0]


def test_agent_env_has_no_import_circle_but_the_known_ones() -> None:
    graph = import_graph(PACKAGE)

    new = [circle(found, graph) for found in strongly_connected(graph) if found not in KNOWN]

    assert not new, "import circles:\n" + "\n".join(new)


def test_every_known_circle_still_exists_so_the_list_only_shrinks() -> None:
    found = set(strongly_connected(import_graph(PACKAGE)))

    gone = [sorted(known) for known in KNOWN if known not in found]

    assert not gone, f"no longer circles, remove them from KNOWN: {gone}"


ABOVE_THE_CORE = (
    "agent_env.openenv",
    "agent_env.client",
    "agent_env.training",
    "agent_env.eval",
    "agent_env.cli",
    "agent_env.view",
)
"""The packages that stand on the core (docs/architecture.md's layers); every other module is the core's."""

NEVER_IMPORTS: dict[str, tuple[str, ...]] = {
    "agent_env.eval": ("agent_env.training", "agent_env.cli"),
    "agent_env.client": ("agent_env.training", "agent_env.eval", "agent_env.openenv", "agent_env.cli"),
    "agent_env.openenv": ("agent_env.training", "agent_env.eval", "agent_env.cli"),
    "agent_env.training": ("agent_env.cli",),
}
"""Areas that stand below others: eval and the trainer's side both stand on the client, which knows
neither of them, nor the server, nor the command line; the server knows neither side of a client."""


def core_modules(graph: Mapping[str, Set[str]]) -> list[str]:
    """The core's modules: every module of the package outside the packages that stand on it."""
    return [module for module in graph if not any(within(module, area) for area in ABOVE_THE_CORE)]


def within(module: str, area: str) -> bool:
    return module == area or module.startswith(f"{area}.")


def forbidden_imports(graph: Mapping[str, Set[str]], rules: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Each import that breaks `rules` (area -> the areas its modules never import), as `a -> b`."""
    return [
        f"{module} -> {imported}"
        for module in sorted(graph)
        for area, forbidden in rules.items()
        if within(module, area)
        for imported in sorted(graph[module])
        if any(within(imported, other) for other in forbidden)
    ]


def test_eval_never_imports_the_trainers_side_and_the_client_never_imports_what_stands_on_it() -> None:
    assert forbidden_imports(import_graph(PACKAGE), NEVER_IMPORTS) == []


def test_the_core_never_imports_a_package_that_stands_on_it() -> None:
    graph = import_graph(PACKAGE)
    core = core_modules(graph)
    rules = dict.fromkeys([module for module in core if module != "agent_env"], ABOVE_THE_CORE)

    assert forbidden_imports(graph, rules) == []
    assert [m for m in graph["agent_env"] if any(within(m, area) for area in ABOVE_THE_CORE)] == []


def test_an_import_against_a_rule_is_found_wherever_it_sits(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "def late():\n    from pkg.high.b import B\n",
            "pkg/high/__init__.py": "",
            "pkg/high/b.py": "from pkg.low import a\n",
            "pkg/lowest.py": "from pkg import high\n",
        },
    )

    found = forbidden_imports(import_graph(root), {"pkg.low": ("pkg.high",), "pkg.lowest": ("pkg.high",)})

    assert found == ["pkg.low.a -> pkg.high.b", "pkg.lowest -> pkg.high"]


def test_a_name_moved_to_cut_a_circle_is_still_importable_from_its_first_home() -> None:
    moved = {
        ("agent_env.sandbox.docker", "docker_client"): "agent_env.sandbox.docker_engine",
        ("agent_env.sandbox.docker", "INSTALL_HINT"): "agent_env.sandbox.docker_engine",
        ("agent_env.sandbox.docker_image", "SANDBOX_LABEL"): "agent_env.sandbox.docker_engine",
    }

    for (first_home, name), home in moved.items():
        found = getattr(importlib.import_module(first_home), name)
        assert found is getattr(importlib.import_module(home), name), f"{first_home}.{name}"


def test_a_circle_closed_only_inside_a_function_or_under_type_checking_is_found(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.c import C\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "def late():\n    from .. import a\n",
            "pkg/d.py": "import pkg.a\n",
        },
    )
    graph = import_graph(root)

    [found] = strongly_connected(graph)

    assert found == {"pkg.a", "pkg.b", "pkg.sub.c"}
    assert circle(found, graph) == "pkg.a -> pkg.b -> pkg.sub.c -> pkg.a  (all of: pkg.a, pkg.b, pkg.sub.c)"


def test_a_lazy_packages_map_of_names_is_not_an_import_but_its_type_checking_imports_are(
    tmp_path: Path,
) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": (
                "import typing as _typing\n"
                "from pkg._lazy import lazy_exports\n"
                "if _typing.TYPE_CHECKING:\n    from pkg.b import B\n"
                'lazy_exports(__name__, {"pkg.a": ["A"]})\n'
            ),
            "pkg/_lazy.py": "",
            "pkg/a.py": "from pkg import B\n",
            "pkg/b.py": "",
        },
    )

    graph = import_graph(root)

    assert graph == {"pkg": {"pkg._lazy", "pkg.b"}, "pkg._lazy": set(), "pkg.a": {"pkg"}, "pkg.b": set()}
    assert strongly_connected(graph) == []
