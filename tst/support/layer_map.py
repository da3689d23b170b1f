"""The map's layer table (docs/architecture.md) as the tests read it: its rows, and the row of a module."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from tst.support.import_graph import PACKAGE

MAP = PACKAGE.parent / "docs" / "architecture.md"
ROOT = PACKAGE.name


@dataclass(frozen=True)
class Row:
    """One row of the layer table, as the test reads it."""

    name: str
    modules: tuple[str, ...]
    may_rows: frozenset[str]
    may_modules: tuple[str, ...]
    may_libraries: frozenset[str]
    never_rows: frozenset[str]
    never_modules: tuple[str, ...]


def names_in(cell: str) -> tuple[frozenset[str], tuple[str, ...], frozenset[str]]:
    """A cell's bold row names, its `agent_env...` module names, and its other backticked names."""
    quoted = re.findall(r"`([^`]+)`", cell)
    modules = tuple(name for name in quoted if name == ROOT or name.startswith(f"{ROOT}."))
    libraries = frozenset(name for name in quoted if name not in modules)
    return frozenset(re.findall(r"\*\*([^*]+)\*\*", cell)), modules, libraries


def layer_table(text: str) -> dict[str, Row]:
    """The rows of the first table under "## The layers", by name."""
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| **")]
    rows = {}
    for line in lines:
        layer, modules, may, never, _behind = (cell.strip() for cell in line.strip("|").split("|"))
        [name], _, _ = names_in(layer)
        may_rows, may_modules, may_libraries = names_in(may)
        never_rows, never_modules, _ = names_in(never)
        rows[name] = Row(
            name, names_in(modules)[1], may_rows, may_modules, may_libraries, never_rows, never_modules
        )
    return rows


def covers(name: str, module: str) -> int | None:
    """How closely `name` (from a modules cell) names `module`: the length of what it matches, or None."""
    if name.endswith("*"):
        return len(name) - 1 if "." not in module[len(name) - 1 :] and fnmatchcase(module, name) else None
    if name == module or (name != ROOT and module.startswith(f"{name}.")):
        return len(name)
    return None


def row_of(module: str, rows: Mapping[str, Row]) -> str | None:
    """The row whose modules cell names `module` most closely; None when none does."""
    best: tuple[int, str] | None = None
    for row in rows.values():
        for name in row.modules:
            closeness = covers(name, module)
            if closeness is not None and (best is None or closeness > best[0]):
                best = (closeness, row.name)
    return best and best[1]
