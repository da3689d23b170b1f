"""The code of a documentation page, read from the page itself: its files (a block titled with the path
it belongs at), its `agent-env` command lines and its Python blocks, so that a test runs what the page
shows, as it shows it."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', flags=re.MULTILINE | re.DOTALL)
QUICKSTART_PAGES = (ROOT / "README.md", ROOT / "docs" / "getting-started.md")
TUTORIAL_PAGE = ROOT / "docs" / "tutorial.md"


@dataclass(frozen=True)
class Block:
    language: str
    title: str | None
    code: str


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks at the start of a line, in order."""
    return [Block(m[1], m[2], m[3]) for m in FENCE.finditer(page.read_text(encoding="utf-8"))]


def write_files(page: Path, folder: Path) -> list[Path]:
    """Each block titled with a path, written there under `folder`."""
    written = []
    for block in blocks(page):
        if block.title is not None:
            path = folder / block.title
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.code, encoding="utf-8")
            written.append(path)
    return written


def commands(page: Path, program: str = "agent-env") -> list[list[str]]:
    """The `program` command lines of the page's bash blocks, as argument lists (comments dropped)."""
    lines = [line for b in blocks(page) if b.language == "bash" for line in b.code.splitlines()]
    return [shlex.split(line, comments=True) for line in lines if line.startswith(f"{program} ")]


def session(page: Path) -> tuple[list[str], list[str]]:
    """The page's one terminal session, a `text` block whose lines start `> ` where the person types:
    what they type (each line after its `> `) and what the program prints (the other lines, blank
    ones left out)."""
    [shown] = [b.code for b in blocks(page) if b.language == "text" and "\n> " in b.code]
    lines = shown.splitlines()
    return [line[2:] for line in lines if line.startswith("> ")], [
        line for line in lines if line.strip() and not line.startswith("> ")
    ]


def python_blocks(page: Path) -> list[str]:
    """The page's Python blocks that are not files of the bundle: scripts a reader runs."""
    return [b.code for b in blocks(page) if b.language == "python" and b.title is None]
