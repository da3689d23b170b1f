"""A bundle's folder as its loader reads it: every problem found so far, and the rules each file read
from it follows (inside the folder, not too big, JSON lines parsed with their line numbers)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_env.errors import Problem


@dataclass
class BundleFolder:
    """The folder at `root` (resolved), the largest file it may hold, and the problems found in it."""

    root: Path
    max_file_bytes: int
    problems: list[Problem] = field(default_factory=list)

    def problem(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

    def reported(self, prefix: str) -> bool:
        """Whether a problem was already found at a place starting with `prefix`."""
        return any(p.where.startswith(prefix) for p in self.problems)

    def inside(self, path: Path, where: str) -> bool:
        """Whether `path` stays inside the folder (no '..' or symlink out of it); a problem if not."""
        if path.resolve().is_relative_to(self.root):
            return True
        self.problem(
            where, f"'{path}' leaves the bundle (through '..' or a symlink); keep every file inside it"
        )
        return False

    def small_enough(self, path: Path, where: str) -> bool:
        """Whether the file is within `max_file_bytes`, so it may be read; a problem if not."""
        size, most = path.stat().st_size, self.max_file_bytes
        if size <= most:
            return True
        self.problem(
            where,
            f"'{path.name}' is {size / 2**20:.0f} MiB, over the {most // 2**20} MiB a bundle's "
            "file may be: split a task file into smaller splits, or keep big data out of sandbox files",
        )
        return False

    def entries(self, file: Path, where: str) -> Iterable[tuple[int | None, Any]]:
        """The JSON values of a `.jsonl` file, each with its line number, or of a `.json` file's list
        (with no line number); each line or file that does not parse is a problem."""
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.problem(where, f"cannot be read: {exc}")
            return
        if file.suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                self.problem(f"{where}:{exc.lineno}", f"malformed JSON: {exc.msg}")
                return
            if not isinstance(data, list):
                self.problem(where, "must hold a JSON list of tasks")
                return
            yield from ((None, entry) for entry in data)
            return
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                self.problem(f"{where}:{number}", f"malformed JSON: {exc.msg} (column {exc.colno})")
