"""mkdocs hooks for `make docs`: pages made from what the repository already holds, never copied.

`<!-- agent-env cli -->` becomes every command's help, from the `agent-env` parser itself;
`<!-- include PATH -->` becomes a file of the repository (AGENTS.md, CONTRIBUTING.md, CHANGELOG.md),
its links to other files of the repository made links into the site, or plain text when the site
has no page for them. `<!-- json PATH -->` shows a file of the repository as a JSON block.
`<!-- api PACKAGE -->` becomes a mkdocstrings entry for each name the package exports, at the module
that defines it, so the API reference lists exactly what `PACKAGE.__all__` does.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import posixpath
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI_MARKER = "<!-- agent-env cli -->"
INCLUDE = re.compile(r"<!-- include (\S+) -->")
JSON = re.compile(r"<!-- json (\S+) -->")
API = re.compile(r"<!-- api (\S+) -->")
LINK = re.compile(r"\[([^\]]*)\]\(([^)#\s]+)(#[^)\s]*)?\)")
HELP_WIDTH = "100"
SITE_PAGES = {
    "AGENTS.md": "contributing/agents.md",
    "CONTRIBUTING.md": "contributing/index.md",
    "CHANGELOG.md": "contributing/changelog.md",
    "README.md": "index.md",
}


def cli_reference() -> str:
    """Each `agent-env` command's `--help`, as argparse prints it at a fixed width."""
    from agent_env.cli import _parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        parser = _parser()
        sections = [f"```text\n{parser.format_help()}```"]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, command in action.choices.items():
                    sections.append(f"### `agent-env {name}`\n\n```text\n{command.format_help()}```")
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "\n\n".join(sections)


def defining_module(package: Any, name: str) -> str:
    """The module a package's export comes from: a lazy package's own map, else the object's
    `__module__`, else (a constant) the package's module that assigns it."""
    exports: dict[str, str] | None = getattr(package, "_exports", None)
    if exports is not None and name in exports:
        return exports[name]
    value = getattr(package, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        return str(value.__module__)
    for module_name, module in sorted(sys.modules.items()):
        if module_name.startswith(package.__name__) and module is not None and name in vars(module):
            source = Path(inspect.getfile(module)).read_text(encoding="utf-8")
            if re.search(rf"^{re.escape(name)}\b[^=\n]*=", source, flags=re.MULTILINE):
                return module_name
    return str(package.__name__)


def api_reference(package_name: str) -> str:
    """A `:::` entry per exported name, in the order of the package's `__all__`."""
    package = importlib.import_module(package_name)
    return "\n\n".join(f"::: {defining_module(package, name)}.{name}" for name in package.__all__)


def site_link(target: str, page_dir: str) -> str | None:
    """Where a link of a repository-root file to `target` points from a page in `page_dir`, or None
    when the site has no page for it."""
    if target.startswith(("http://", "https://", "mailto:")):
        return target
    if target in SITE_PAGES:
        return posixpath.relpath(SITE_PAGES[target], page_dir or ".")
    if target.startswith("docs/") and (ROOT / target).is_file():
        return posixpath.relpath(target.removeprefix("docs/"), page_dir or ".")
    return None


def included(path: str, page_dir: str) -> str:
    """A file of the repository, its links pointed into the site from the including page."""
    text = (ROOT / path).read_text(encoding="utf-8")

    def relink(match: re.Match[str]) -> str:
        words, target, anchor = match.group(1), match.group(2), match.group(3) or ""
        link = site_link(target, page_dir)
        return words if link is None else f"[{words}]({link}{anchor})"

    return LINK.sub(relink, text)


def out_of_docs(markdown: str, page_dir: str) -> str:
    """A page of docs/ links to a file of the repository (`../AGENTS.md`) as GitHub shows it; in the
    site the link goes to that file's page, or becomes plain text when the site has none."""

    def relink(match: re.Match[str]) -> str:
        words, target, anchor = match.group(1), match.group(2), match.group(3) or ""
        in_repository = posixpath.normpath(posixpath.join("docs", page_dir, target))
        if in_repository.startswith("docs/") or target.startswith(("http://", "https://", "mailto:")):
            return match.group(0)
        link = site_link(in_repository, page_dir)
        return words if link is None else f"[{words}]({link}{anchor})"

    return LINK.sub(relink, markdown)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    page_dir = posixpath.dirname(page.file.src_uri)
    markdown = out_of_docs(markdown, page_dir)
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    markdown = API.sub(lambda m: api_reference(m.group(1)), markdown)
    markdown = INCLUDE.sub(lambda m: included(m.group(1), page_dir), markdown)
    return JSON.sub(lambda m: "```json\n" + (ROOT / m.group(1)).read_text(encoding="utf-8") + "```", markdown)
