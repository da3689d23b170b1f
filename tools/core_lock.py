"""The part of the dev/test lock that an install of the core alone needs to run the core's unit tests.

    python -m tools.core_lock > core.lock

Prints, as they stand in requirements/dev.lock (pins and hashes), the entries of the core's own
dependencies, of the test runner and of the build backend (`make test-core` installs the package
with it, as `make install` does), and of everything those pull in. What pulls in what is read from
the lock's `# via` notes, so no extra's distribution is ever among them. Standard library only: it
runs before any virtualenv exists.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "dev.lock"
TEST_RUNNER = ("pytest", "pytest-timeout")
"""What the unit tier runs with: the only distributions of the dev extra the core-only install gets."""

_ENTRY = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==", re.MULTILINE)
_VIA = re.compile(r"^\s+#\s+(?:via\s+)?(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\s|$)", re.MULTILINE)
_REQUIREMENT_NAME = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(lock: str) -> dict[str, str]:
    """Each locked distribution's entry (its pin, hashes and `# via` notes), by normalized name."""
    starts = list(_ENTRY.finditer(lock))
    ends = [m.start() for m in starts[1:]] + [len(lock)]
    return {normalized(m["name"]): lock[m.start() : end] for m, end in zip(starts, ends, strict=True)}


def pulled_in_by(entry: str) -> set[str]:
    """The distributions the lock says need this one (its `# via` notes)."""
    return {normalized(m["name"]) for m in _VIA.finditer(entry)}


def roots(pyproject: dict[str, dict[str, list[str]]]) -> set[str]:
    """The core's dependencies, the build backend and the test runner."""
    requirements = pyproject["project"]["dependencies"] + pyproject["build-system"]["requires"]
    named = (_REQUIREMENT_NAME.match(requirement) for requirement in requirements)
    return {normalized(m["name"]) for m in named if m} | {normalized(name) for name in TEST_RUNNER}


def core_entries(lock: str, pyproject: dict[str, dict[str, list[str]]]) -> list[str]:
    """The lock's entries for the roots and all they pull in, in the lock's order."""
    locked = entries(lock)
    wanted = roots(pyproject)
    missing = sorted(wanted - locked.keys())
    if missing:
        raise SystemExit(f"core_lock: {', '.join(missing)} not in {LOCK.name}: run make lock")
    while True:
        more = {name for name, entry in locked.items() if pulled_in_by(entry) & wanted} - wanted
        if not more:
            return [entry for name, entry in locked.items() if name in wanted]
        wanted |= more


def main() -> int:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lock = LOCK.read_text(encoding="utf-8")
    sys.stdout.write("# make test-core: the core's part of requirements/dev.lock\n")
    sys.stdout.write("".join(core_entries(lock, pyproject)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
