"""Bundles written into a test's folder, for every tier: a shelf env, a reader agent, a task to shelve
a book; each part replaceable, so a test writes exactly the bundle it is about; and which files a load
reads (`files_read`)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

SHELF = '''
from agent_env import Env, tool


class Shelf(Env):
    """Books on a shelf."""

    def setup(self, seed):
        self.books = list(seed.get("books", []))

    def items(self):
        return list(self.books)

    @tool
    def put_book(self, title: str) -> str:
        """Put a book on the shelf.

        Args:
            title: The book's title.
        """
        self.books.append(title)
        return "ok"
'''

TOML = """
[agents.reader]
envs = ["shelf"]
system_prompt = "You keep the shelf."
"""


def a_task(**fields):
    """A task line of the reader's (shelve Dune), with `fields` added or replaced."""
    task = {
        "id": "t1",
        "agent": "reader",
        "turns": ["Shelve Dune."],
        "verifiers": [{"type": "items", "env": "shelf", "expected": ["Dune"]}],
    }
    return {**task, **fields}


def make_bundle(root: Path, *, toml=TOML, envs=None, tasks=None, verifiers=None, files=None) -> Path:
    """Write a bundle at `root`: `toml`, `envs` (name -> source; the shelf), `tasks` (split -> lines or
    text; train, one `a_task()`), and `verifiers.py` and other `files` when given."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.toml").write_text(textwrap.dedent(toml))
    (root / "envs").mkdir(exist_ok=True)
    for name, source in (envs if envs is not None else {"shelf": SHELF}).items():
        (root / "envs" / f"{name}.py").write_text(textwrap.dedent(source))
    (root / "tasks").mkdir(exist_ok=True)
    for split, content in (tasks if tasks is not None else {"train": [a_task()]}).items():
        text = content if isinstance(content, str) else "".join(json.dumps(t) + "\n" for t in content)
        (root / "tasks" / f"{split}.jsonl").write_text(text)
    if verifiers is not None:
        (root / "verifiers.py").write_text(textwrap.dedent(verifiers))
    for name, content in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    return root


def files_read(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file whose bytes or text are read (`Path.read_bytes`, `Path.read_text`: how a bundle's
    and a Harbor task's files are) from now on, by the path it resolves to."""
    read: list[Path] = []
    for name in ("read_bytes", "read_text"):
        original = getattr(Path, name)

        def recorded(self: Path, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            read.append(self.resolve())
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Path, name, recorded)
    return read
