"""No import circles in `agent_env`: its modules' imports read one way, beyond a known list that only shrinks.

The graph is read as `tst/support/import_graph.py` says; which package may import which is
tst/unit/layers_test.py's, from the map's table.
"""

from __future__ import annotations

import importlib
from collections import deque
from collections.abc import Iterator, Mapping, Set
from pathlib import Path

from tst.support.import_graph import PACKAGE, import_graph

KNOWN: dict[frozenset[str], str] = {}
"""Today's circles, each with why it is still there; a circle not listed fails, and so does one listed
that is gone, so the list only shrinks. It is empty: keep it so."""


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


def test_a_name_moved_to_cut_a_circle_is_still_importable_from_its_first_home() -> None:
    moved = {
        ("agent_env.sandbox._docker", "docker_client"): "agent_env.sandbox._docker_engine",
        ("agent_env.sandbox._docker", "INSTALL_HINT"): "agent_env.sandbox._docker_engine",
        ("agent_env.sandbox._docker_image", "SANDBOX_LABEL"): "agent_env.sandbox._docker_engine",
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


def test_an_import_written_as_a_call_with_a_literal_name_is_an_edge(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "import importlib\n\ndef late():\n    return importlib.import_module('pkg.b')\n",
            "pkg/b.py": "from importlib import import_module\nimport_module('pkg.a')\nimport_module(NAME)\n",
        },
    )

    graph = import_graph(root)

    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}
