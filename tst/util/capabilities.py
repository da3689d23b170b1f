"""Capabilities of the machine that some tests need, decided once, at collection.

A test declares what it needs with `@pytest.mark.needs("docker_engine")` (or a tier's conftest
declares it for a whole folder). When the machine lacks it, the test is skipped with a reason of
one fixed form, `missing capability: NAME (how to get it)`, so CI can tell a declared skip from
any other. Nothing else may skip.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

import pytest

SKIP_PREFIX = "missing capability: "


@dataclass(frozen=True)
class Capability:
    name: str
    how: str
    check: Callable[[], bool]


def _docker_engine() -> bool:
    if importlib.util.find_spec("docker") is None:
        return False
    import docker

    try:
        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _trl_installed() -> bool:
    """TRL with torch, and aiohttp, which AsyncGRPO's rollout worker needs."""
    needed = ("trl", "torch", "transformers", "aiohttp")
    return all(importlib.util.find_spec(name) is not None for name in needed)


def _package_index() -> bool:
    """pip's package index answers (PIP_INDEX_URL, else PyPI): a test that installs from it needs that."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/")
    try:
        with urllib.request.urlopen(f"{index}/pip/", timeout=10) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _bubblewrap() -> bool:
    from agent_env.sandbox.bubblewrap import bubblewrap_for

    return bubblewrap_for("auto") is not None


def chromium_paths() -> tuple[str, str]:
    """The browser and its driver: Debian's chromium and chromium-driver, unless AGENT_ENV_CHROMIUM and
    AGENT_ENV_CHROMEDRIVER name others (a runner's preinstalled Chrome)."""
    return (
        os.environ.get("AGENT_ENV_CHROMIUM", "/usr/bin/chromium"),
        os.environ.get("AGENT_ENV_CHROMEDRIVER", "/usr/bin/chromedriver"),
    )


def _chromium() -> bool:
    """The browser, its driver, and selenium to drive them (the viewer's page tests)."""
    found = all(os.access(path, os.X_OK) for path in chromium_paths())
    return found and importlib.util.find_spec("selenium") is not None


def _openenv_installed() -> bool:
    return importlib.util.find_spec("openenv") is not None


CAPABILITIES = {
    c.name: c
    for c in (
        Capability(
            "docker_engine", "start a Docker engine: see ../shared/reference/docker-engine.md", _docker_engine
        ),
        Capability(
            "trl_installed",
            "make install (the lock pins torch's CPU build, TRL 1.16 and aiohttp); run make trl-test",
            _trl_installed,
        ),
        Capability("openenv_installed", "pip install -e '.[openenv]'", _openenv_installed),
        Capability("bubblewrap", "apt-get install bubblewrap (where namespaces are allowed)", _bubblewrap),
        Capability(
            "chromium",
            "apt-get install chromium chromium-driver (Debian's), and selenium (make install)",
            _chromium,
        ),
        Capability("package_index", "reach pip's package index (PIP_INDEX_URL, else PyPI)", _package_index),
    )
}


@functools.cache
def has(name: str) -> bool:
    """Whether the machine has the capability `name`; AGENT_ENV_REQUIRE lists ones that must be there."""
    return CAPABILITIES[name].check()


def skip_reason(name: str) -> str:
    return f"{SKIP_PREFIX}{name} ({CAPABILITIES[name].how})"


def apply(item: pytest.Item) -> None:
    """Skip `item` when a capability it needs is missing; refuse unknown capability names."""
    for mark in item.iter_markers("needs"):
        for name in mark.args:
            if name not in CAPABILITIES:
                raise pytest.UsageError(
                    f"{item.nodeid} needs unknown capability '{name}' ({', '.join(CAPABILITIES)})"
                )
            if not has(name):
                required = {n for n in os.environ.get("AGENT_ENV_REQUIRE", "").split(",") if n}
                if name in required:
                    raise pytest.UsageError(
                        f"capability '{name}' is required here but missing: {CAPABILITIES[name].how}"
                    )
                item.add_marker(pytest.mark.skip(reason=skip_reason(name)))
