"""make test-core's install: the lock's entries for the core and the test runner, and no extra's."""

from __future__ import annotations

import re
import tomllib

import pytest

from tools import core_lock

PYPROJECT = tomllib.loads((core_lock.ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def pinned(entries: list[str]) -> dict[str, str]:
    return {core_lock.normalized(m[1]): m[2] for m in (re.match(r"(\S+)==(\S+)", e) for e in entries) if m}


def test_the_core_install_pins_the_core_s_dependencies_and_the_test_runner_at_the_lock_s_versions():
    lock = core_lock.LOCK.read_text(encoding="utf-8")

    pins = pinned(core_lock.core_entries(lock, PYPROJECT))

    locked = pinned(list(core_lock.entries(lock).values()))
    for name in ("pydantic", "pydantic-core", "docstring-parser", "pytest", "pytest-timeout", "setuptools"):
        assert pins[name] == locked[name]
    assert all("--hash=sha256:" in entry for entry in core_lock.core_entries(lock, PYPROJECT))


def test_the_core_install_holds_nothing_an_extra_requires_nor_torch_nor_trl():
    lock = core_lock.LOCK.read_text(encoding="utf-8")
    extras = PYPROJECT["project"]["optional-dependencies"]
    test_runner = set(core_lock.TEST_RUNNER)
    of_extras = (
        {
            core_lock.normalized(re.match(r"[A-Za-z0-9._-]+", requirement)[0])
            for requirements in extras.values()
            for requirement in requirements
        }
        - test_runner
        - {"agentenv-framework"}
    )

    pins = pinned(core_lock.core_entries(lock, PYPROJECT))

    assert sorted(pins.keys() & (of_extras | {"torch", "trl", "transformers"})) == []


def test_a_dependency_the_lock_does_not_pin_stops_the_install_naming_it():
    lock = core_lock.LOCK.read_text(encoding="utf-8")
    pyproject = {**PYPROJECT, "project": {**PYPROJECT["project"], "dependencies": ["not-locked-anywhere>=1"]}}

    with pytest.raises(SystemExit, match=r"not-locked-anywhere not in dev\.lock: run make lock"):
        core_lock.core_entries(lock, pyproject)
