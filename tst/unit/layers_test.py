"""The map's layer table is the import rule: docs/architecture.md's table, read here, row by row.

Every module of `agent_env` belongs to the row whose modules cell names it most closely (a name covers
the module and what is under it; `agent_env._*` covers the private helpers at the top; `agent_env`
alone covers the package's `__init__` alone). A row's modules may import their own row, the rows its
"may import" cell names in bold, and the `agent_env...` modules it names (even inside a row it never
imports otherwise: the row's named exceptions); never what its "never imports" cell names; and only
the libraries (any other name in backticks) it names.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from pathlib import Path

import pytest

from tst.support.import_graph import import_graph, third_party_imports
from tst.support.layer_map import MAP, Row, layer_table, row_of


def within(module: str, names: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in names)


def broken_rules(
    graph: Mapping[str, Set[str]], libraries: Mapping[str, Set[str]], rows: Mapping[str, Row]
) -> list[str]:
    """Each import the table does not allow, each library a row does not name, and each module no row
    names, worded for the person who will fix the code or the map."""
    broken = []
    for module in sorted(graph):
        own = row_of(module, rows)
        if own is None:
            broken.append(f"{module} is in no row of the layer table: add it to the row it belongs to")
            continue
        row = rows[own]
        for imported in sorted(graph[module]):
            theirs = row_of(imported, rows)
            allowed = theirs == own or theirs in row.may_rows or within(imported, row.may_modules)
            named = within(imported, row.may_modules)
            forbidden = (theirs in row.never_rows and not named) or within(imported, row.never_modules)
            if forbidden or not allowed:
                where = theirs or "in no row"
                broken.append(f"{module} ({own}) imports {imported} ({where}), which its row does not allow")
        for library in sorted(libraries.get(module, set()) - row.may_libraries):
            broken.append(f"{module} ({own}) imports the library {library}, which its row does not name")
    return broken


def table(text: str) -> str:
    header = "| layer | modules | may import | never imports | behind |\n|---|---|---|---|---|\n"
    return f"## The layers\n\n{header}{text}\n## Next\n"


def write(root: Path, files: Mapping[str, str]) -> Path:
    for relative, source in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(source)
    return root / next(iter(files)).split("/")[0]


@pytest.fixture(scope="module")
def rows() -> dict[str, Row]:
    return layer_table(MAP.read_text(encoding="utf-8"))


def test_every_import_of_agent_env_is_one_its_row_of_the_map_allows(rows: dict[str, Row]) -> None:
    assert broken_rules(import_graph(), third_party_imports(), rows) == []


def test_no_row_of_the_map_both_allows_and_forbids_a_layer(rows: dict[str, Row]) -> None:
    both = {row.name: sorted(row.may_rows & row.never_rows) for row in rows.values()}

    assert {name: layers for name, layers in both.items() if layers} == {}
    assert sorted({*(n for row in rows.values() for n in row.may_rows | row.never_rows)} - rows.keys()) == []


def test_the_map_keeps_the_rules_the_project_stands_on(rows: dict[str, Row]) -> None:
    assert {"server", "trainer", "eval", "cli"} <= rows["client"].never_rows
    assert {"engine", "loading", "server", "cli"} & rows["trainer"].may_rows == set()
    assert {"trainer", "cli"} <= rows["eval"].never_rows
    assert {"trainer", "eval", "cli"} <= rows["server"].never_rows
    assert rows["kernel"].may_rows == set()
    assert rows["kernel"].may_libraries <= {"pydantic", "docstring_parser"}
    assert {"openenv", "trl", "torch", "datasets"} & rows["kernel"].may_libraries == set()


def test_an_import_the_table_does_not_allow_is_found_wherever_it_sits_and_a_named_one_is_allowed(
    tmp_path: Path,
) -> None:
    root = write(
        tmp_path,
        {
            "agent_env/__init__.py": "",
            "agent_env/low/__init__.py": "import yaml\n",
            "agent_env/low/a.py": (
                "def late():\n    import importlib\n    importlib.import_module('agent_env.high.b')\n"
            ),
            "agent_env/low/helper.py": "from agent_env.high import special\n",
            "agent_env/high/__init__.py": "",
            "agent_env/high/b.py": "from agent_env.low import a\n",
            "agent_env/high/special.py": "",
            "agent_env/stray.py": "",
        },
    )
    rows = layer_table(
        table(
            "| **low** | `agent_env.low` | `agent_env.high.special` | **high** | |\n"
            "| **high** | `agent_env.high`, `agent_env` | **low**; `yaml` | | |\n"
        )
    )

    found = broken_rules(import_graph(root), third_party_imports(root), rows)

    assert found == [
        "agent_env.low (low) imports the library yaml, which its row does not name",
        "agent_env.low.a (low) imports agent_env.high.b (high), which its row does not allow",
        "agent_env.stray is in no row of the layer table: add it to the row it belongs to",
    ]


def test_a_module_belongs_to_the_row_that_names_it_most_closely() -> None:
    rows = layer_table(
        table(
            "| **kernel** | `agent_env._*`, `agent_env._bundle.folder` | | | |\n"
            "| **engine** | `agent_env._bundle`, `agent_env._bundle.reader` | | | |\n"
            "| **top** | `agent_env` | | | |\n"
        )
    )

    assert row_of("agent_env._errors", rows) == "kernel"
    assert row_of("agent_env._bundle.folder", rows) == "kernel"
    assert row_of("agent_env._bundle.tasks", rows) == "engine"
    assert row_of("agent_env._bundle", rows) == "engine"
    assert row_of("agent_env", rows) == "top"
    assert row_of("agent_env.other", rows) is None
