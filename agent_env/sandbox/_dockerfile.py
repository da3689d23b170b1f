"""The images a Dockerfile builds on, read from its text: each stage's `FROM` and each `COPY --from`
that names an image rather than a stage.

An image built from a folder is reused while the folder is unchanged, and only while the images it
builds on are the ones it was built from: a `FROM python:3.12-slim` re-tagged to a newer image must
rebuild the task's. This reads which images those are, as Docker's classic builder does (the builder
the engine's API runs): `ARG`s declared before the first `FROM` with a default are what `FROM` may
use (no build argument is ever passed here); a variable it cannot tell makes the list unknown, and
the image is then built at every load (Docker's own cache keeps that quick).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from agent_env._errors import AgentEnvError

_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z][a-zA-Z0-9_-]*)\s*=\s*(.*?)\s*$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
NO_BASE = "scratch"
"""`FROM scratch`: an empty image, built on nothing."""


class _UnknownError(AgentEnvError):
    """A name that cannot be told without building (a variable that is not declared): caught here,
    never raised out."""


def base_images(text: str) -> tuple[str, ...] | None:
    """The images the Dockerfile `text` builds on, in their order, each once; None when one of them
    cannot be told from the text (a variable no `ARG` before the first `FROM` declares)."""
    declared: dict[str, str | None] = {}
    stages: list[str] = []
    bases: list[str] = []
    seen_from = False
    try:
        for keyword, rest in _instructions(text):
            if keyword == "ARG" and not seen_from:
                declared.update(_arguments(rest))
            elif keyword == "FROM":
                seen_from = True
                words = [word for word in rest.split() if not word.startswith("--")]
                if not words:
                    continue
                image = _substitute(words[0], declared)
                if image.lower() not in stages:  # else a stage built before this one
                    _add(bases, image)
                if len(words) >= 3 and words[1].lower() == "as":
                    stages.append(words[2].lower())
            elif keyword in {"COPY", "ADD"}:
                for word in rest.split():
                    if not word.startswith("--"):
                        break
                    if word.lower().startswith("--from="):
                        source = word.split("=", 1)[1]
                        if "$" in source:
                            raise _UnknownError(source)
                        if not source.isdigit() and source.lower() not in stages:
                            _add(bases, source)
    except _UnknownError:
        return None
    return tuple(bases)


def _add(bases: list[str], image: str) -> None:
    if image and image not in bases and image.lower() != NO_BASE:
        bases.append(image)


def _instructions(text: str) -> list[tuple[str, str]]:
    """Each instruction's keyword (upper case) and the rest of it, its continued lines joined."""
    lines = text.splitlines()
    escape = "\\"
    for index, line in enumerate(lines):  # parser directives: only at the very top
        directive = _DIRECTIVE.match(line)
        if directive is None:
            break
        if directive.group(1).lower() == "escape" and directive.group(2) in {"\\", "`"}:
            escape = directive.group(2)
        lines[index] = ""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in lines:
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and not pending.strip()):
            continue
        if pending and stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        stripped = line.rstrip()
        if stripped.endswith(escape):
            pending += stripped[: -len(escape)] + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        keyword, _, rest = whole.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    if pending.strip():
        keyword, _, rest = pending.strip().partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    return instructions


def _arguments(rest: str) -> dict[str, str | None]:
    """`ARG NAME` or `ARG NAME=default` (several in one, quoted or not)."""
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    declared: dict[str, str | None] = {}
    for word in words:
        name, has_default, default = word.partition("=")
        declared[name] = default if has_default else None
    return declared


def _substitute(word: str, declared: Mapping[str, str | None]) -> str:
    """`word` with its variables replaced as the builder would, given no build argument: a declared
    one without a default is empty; one not declared at all is unknown, unless a default is written."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(4)
        given = declared.get(name) or ""
        if match.group(2) == "-":
            word = match.group(3)
            if "$" in word:
                raise _UnknownError(word)
            return given or word
        if match.group(2) == "+":
            if "$" in match.group(3):
                raise _UnknownError(match.group(3))
            return match.group(3) if given else ""
        if name not in declared:
            raise _UnknownError(name)
        return given

    return _VARIABLE.sub(value, word)
