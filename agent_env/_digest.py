"""A folder's content as one digest: every file that may be read or run, by its path in the folder.

A bundle's score is decided by more than the task specs its Task API lists: its verifiers'
expectations, seeds and sandbox files, env and verifier code, `users.py`, MCP servers' code. Any file
of the folder may be one of them, so every file counts but Python's caches and version-control or
tool folders, which running or checking out the bundle writes and no score reads. The folder's own
place does not count: identical copies anywhere give the same digest.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

NOT_CONTENT_DIRS = frozenset(
    {"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
"""Folders left out wherever they are: caches and version control, never read by a bundle's tasks."""
NOT_CONTENT_SUFFIXES = (".pyc", ".pyo")
"""Files left out: Python's compiled caches."""


def folder_digest(root: Path) -> str:
    """`sha256:` over every file under `root` (each path relative to it, and its bytes), in path order.

    A symlink counts as its target's path and, when that is a file, its bytes; a linked folder is not
    followed (its target's path counts), so a cycle cannot make this loop.
    """
    entries: list[tuple[str, str]] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        for name in dirs:
            if (here / name).is_symlink():
                entries.append(_entry(root, here / name))
        dirs[:] = [name for name in dirs if name not in NOT_CONTENT_DIRS]
        entries.extend(_entry(root, here / name) for name in files if not name.endswith(NOT_CONTENT_SUFFIXES))
    total = hashlib.sha256()
    for relative, digest in sorted(entries):
        total.update(f"{relative}\0{digest}\n".encode("utf-8", "surrogateescape"))
    return "sha256:" + total.hexdigest()


def _entry(root: Path, path: Path) -> tuple[str, str]:
    relative = path.relative_to(root).as_posix()
    parts: list[str] = []
    if path.is_symlink():
        parts.append("link:" + os.readlink(path))
    if path.is_file():
        with path.open("rb") as file:
            parts.append(hashlib.file_digest(file, "sha256").hexdigest())
    return relative, " ".join(parts)
