"""The example bundles' generators: loaded from their generate.py, and the files they write, compared."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def generator(bundle: Path) -> ModuleType:
    """The bundle's generate.py, loaded as a module (its `write(folder)` writes tasks and solutions)."""
    spec = importlib.util.spec_from_file_location(f"{bundle.name}_generate", bundle / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contents(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by its relative path."""
    return {
        str(file.relative_to(folder)): file.read_bytes()
        for file in sorted(folder.rglob("*"))
        if file.is_file()
    }
