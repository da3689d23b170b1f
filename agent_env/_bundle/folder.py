"""A bundle's folder as its loader reads it: every problem found so far, and the one rule every file
read from it follows (`read`: inside the folder, a regular file, not too big), JSON lines parsed with
their line numbers. A folder of Harbor tasks is read by the same rule (`agent_env.harbor._loader`).

A file that leads out of the folder (a symlink to any file of the machine, or a path with '..') is
refused unread, whatever reads it: what a task is made of (its prompt above all) goes to model
endpoints and into recordings, so it must be what the folder holds. A link to a file inside the
folder is fine.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_env._error_types import Problem

MAX_PROMPT_BYTES = 2**20
"""The longest prompt a task may give its agent (a turn, a Harbor task's instruction.md), in UTF-8
bytes: far more than a model's context holds, and each one is sent with every request and recorded."""
PROMPT_FIX = (
    "shorten it (a model's context holds far less), and give the task the data it needs as files "
    "instead (a bundle's sandbox files, a Harbor task's environment/)"
)


@dataclass(frozen=True)
class Cap:
    """The most bytes a thing may hold, what it is ("a prompt"), and what to do about one over it."""

    most: int
    what: str
    fix: str

    def over(self, size: int) -> str | None:
        """Why `size` bytes are too many, as a problem says it; None if they are not."""
        if size <= self.most:
            return None
        return f"is {_mib(size)}, over the {_mib(self.most)} {self.what} may be: {self.fix}"


PROMPT_CAP = Cap(MAX_PROMPT_BYTES, "a prompt", PROMPT_FIX)


def too_long_a_prompt(text: str) -> str | None:
    """Why `text` is too long to be a prompt (`PROMPT_CAP`), as a problem says it; None if it is not."""
    return PROMPT_CAP.over(len(text.encode("utf-8", "surrogatepass")))


@dataclass
class BundleFolder:
    """The folder at `root` (resolved), the largest file it may hold, and the problems found in it;
    `kind` is what its problems call it ("bundle", "task folder")."""

    root: Path
    max_file_bytes: int
    problems: list[Problem] = field(default_factory=list)
    kind: str = "bundle"

    def problem(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

    def reported(self, prefix: str) -> bool:
        """Whether a problem was already found at a place starting with `prefix`."""
        return any(p.where.startswith(prefix) for p in self.problems)

    def inside(self, path: Path, where: str) -> bool:
        """Whether `path` stays inside the folder (no '..' or symlink out of it); a problem if not."""
        target = path.resolve()
        if target.is_relative_to(self.root):
            return True
        self.problem(
            where,
            f"leads out of the {self.kind} (a symlink or '..'), to '{target}': put the file itself in the "
            f"{self.kind} (a link to a file inside it is fine); nothing out of it is read",
        )
        return False

    def small_enough(self, path: Path, where: str, cap: Cap | None = None) -> bool:
        """Whether the file is within `cap` (by default, `max_file_bytes`), so it may be read; a
        problem if not."""
        cap = cap or Cap(
            self.max_file_bytes,
            f"a {self.kind}'s file",
            "split a task file into smaller splits, or keep big data out of sandbox files",
        )
        why = cap.over(path.stat().st_size)
        if why is None:
            return True
        self.problem(where, f"'{path.name}' {why}")
        return False

    def read(self, path: Path, where: str, cap: Cap | None = None) -> bytes | None:
        """The bytes of the folder's file at `path`; None, with a problem saying why, when it leads out
        of the folder, is not a regular file, or is over `cap`: each checked before a byte is read."""
        if not self.inside(path, where):
            return None
        if not path.is_file():
            self.problem(where, f"'{path.name}' is not a regular file: put the file itself there")
            return None
        if not self.small_enough(path, where, cap):
            return None
        try:
            return path.read_bytes()
        except OSError as exc:
            self.problem(where, f"cannot be read: {exc}")
            return None

    def read_text(self, path: Path, where: str, cap: Cap | None = None) -> str | None:
        """`read`, as UTF-8 text; a file that is not is a problem."""
        data = self.read(path, where, cap)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problem(where, f"cannot be read: {exc}; save it as UTF-8")
            return None

    def entries(self, file: Path, where: str) -> Iterator[tuple[int | None, Any]] | None:
        """The JSON values of a `.jsonl` file, each with its line number, or of a `.json` file's list
        (with no line number); each line or file that does not parse is a problem. None when the file
        cannot be read (`read`)."""
        text = self.read_text(file, where)
        return None if text is None else self._parsed(file, where, text)

    def _parsed(self, file: Path, where: str, text: str) -> Iterator[tuple[int | None, Any]]:
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


def _mib(size: int) -> str:
    """`size` in MiB, rounded up to a hundredth: a size over a cap never reads as the cap itself."""
    return f"{math.ceil(size * 100 / 2**20) / 100:g} MiB"
