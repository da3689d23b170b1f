"""How the tiers share helpers: from tst/support, or from a tier's own `_`-prefixed modules.

Each tier is run on its own (`pytest tst/reliability`, `pytest tst/trl`, ...), so a helper one tier
takes from another's folder, from a `*_test.py` module or from a conftest ties the two together:
moving or deleting a test would break a tier that never ran it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TST = Path(__file__).resolve().parents[2]
ROOT = TST.parent


def imported(module: ast.Module) -> Iterator[tuple[int, str]]:
    """The `tst.` modules a module imports, with their lines; `from tst.x import y` is `tst.x.y` when
    `y` is a module of its own."""
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            folder = ROOT.joinpath(*node.module.split("."))
            for alias in node.names:
                is_module = (folder / f"{alias.name}.py").is_file() or (folder / alias.name).is_dir()
                yield node.lineno, f"{node.module}.{alias.name}" if is_module else node.module


def allowed(importer: Path, target: str) -> bool:
    parts = target.split(".")
    if parts[0] != "tst" or len(parts) < 2 or parts[1] in ("support", "util"):  # util: the runner's tooling
        return True
    same_tier = parts[1] == importer.relative_to(TST).parts[0]
    return same_tier and parts[-1].startswith("_")


def test_a_test_module_imports_helpers_only_from_tst_support_or_its_own_tier_s_underscored_modules() -> None:
    stray = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for path in sorted(TST.rglob("*.py"))
        for line, target in imported(ast.parse(path.read_text()))
        if not allowed(path, target)
    ]

    assert stray == []
