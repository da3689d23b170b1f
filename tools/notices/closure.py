"""What each install brings: the closure of distributions of the base and of each extra, as locked."""

from __future__ import annotations

import importlib.metadata
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

from tools.lockfile import LOCK, ROOT, locked

PYPROJECT = ROOT / "pyproject.toml"
NOTICES = ROOT / "THIRD_PARTY_NOTICES.md"
SELF = canonicalize_name("agentenv-framework")
CORE = "core"
# The tests' and linters' tools: installed for development, never with the package by its users.
UNLISTED_EXTRAS = frozenset({"dev"})
# Installed by the trainer, not by any extra; the preface says so while neither shows up in a closure.
TRAINERS_OWN = ("trl", "torch")
REGENERATE = "make notices"

Distribution = importlib.metadata.Distribution


class NoticesError(Exception):
    """The installed metadata cannot give a complete answer; the message says what to install or add."""


def declared(pyproject: Path = PYPROJECT) -> dict[str, list[Requirement]]:
    """Each install's own requirements as pyproject.toml declares them: `core` (the base), then each extra."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    areas = {CORE: [Requirement(text) for text in project.get("dependencies", [])]}
    for extra, requirements in project.get("optional-dependencies", {}).items():
        if extra not in UNLISTED_EXTRAS:
            areas[extra] = [Requirement(text) for text in requirements]
    return areas


def included_extras(area: str, areas: Mapping[str, Sequence[Requirement]]) -> list[str]:
    """The extras `area` includes by requiring `agentenv-framework[...]`, followed transitively, sorted."""
    found: set[str] = set()
    pending = [area]
    while pending:
        for requirement in areas[pending.pop()]:
            if canonicalize_name(requirement.name) == SELF:
                new = requirement.extras - found
                found |= new
                pending.extend(new)
    return sorted(found - {area})


def install_requirements(area: str, areas: Mapping[str, Sequence[Requirement]]) -> list[Requirement]:
    """What installing `agentenv-framework[area]` asks for besides itself: base, extra, its includes."""
    parts = [CORE] if area == CORE else [CORE, area, *included_extras(area, areas)]
    return [r for part in parts for r in areas[part] if canonicalize_name(r.name) != SELF]


def _applies(requirement: Requirement, extra: str) -> bool:
    """Whether a requirement holds here, for the distribution's `extra` ("" for the distribution alone)."""
    return requirement.marker is None or requirement.marker.evaluate({"extra": extra})


def installed(name: NormalizedName, needed_by: str) -> Distribution:
    """The installed distribution `name`; missing, the notices would be incomplete, so it is an error."""
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise NoticesError(
            f"{name} (required by {needed_by}) is not installed here, so its license cannot be read: "
            "install the package with every extra first (make install), then run again"
        ) from None


def closure(
    requirements: Iterable[Requirement], needed_by: str = "pyproject.toml"
) -> dict[str, Distribution]:
    """Every installed distribution that installing `requirements` brings, following markers and extras.

    Keyed by normalized name. A distribution's extras are followed only where a requirement asks for them.
    """
    found: dict[str, Distribution] = {}
    seen: set[tuple[str, str]] = set()
    pending = [(r, needed_by) for r in requirements if _applies(r, "")]
    while pending:
        requirement, parent = pending.pop()
        name = canonicalize_name(requirement.name)
        if name not in found:
            found[name] = installed(name, parent)
        for extra in ("", *sorted(requirement.extras)):
            if (name, extra) not in seen:
                seen.add((name, extra))
                requires = (Requirement(text) for text in found[name].requires or [])
                pending.extend((r, name) for r in requires if _applies(r, extra))
    found.pop(SELF, None)
    return found


def closures(pyproject: Path = PYPROJECT, lock: Path = LOCK) -> dict[str, dict[str, Distribution]]:
    """For each install (`core`, then each extra), every distribution it brings, the base's included.

    The distributions are the installed ones, which must be the locked ones: the notices describe the
    lock, the same set on every machine that installs it.
    """
    areas = declared(pyproject)
    found = {area: closure(install_requirements(area, areas)) for area in areas}
    require_locked({name: dist for dists in found.values() for name, dist in dists.items()}, lock)
    return found


def require_locked(dists: Mapping[str, Distribution], lock: Path = LOCK) -> None:
    """Fail naming every distribution installed at another version than the lock's, or not locked."""
    pins = locked(lock)
    astray = [
        f"{name} {dist.version} ({_pinned(pins.get(canonicalize_name(name)))})"
        for name, dist in sorted(dists.items())
        if pins.get(canonicalize_name(name)) != dist.version
    ]
    if astray:
        raise NoticesError(
            f"the installed packages are not the locked set ({lock.name}): {', '.join(astray)}; "
            "run `make install`, or `make lock` after changing pyproject.toml"
        )


def _pinned(version: str | None) -> str:
    return f"locked: {version}" if version else "not locked"
