"""Capabilities of the machine that some tests need, decided once, at collection.

A test declares what it needs with `@pytest.mark.needs("docker_engine")` (or a tier's conftest
declares it for a whole folder; a module whose imports need an extra declares it in its
`pytestmark`, read before the module is imported). When the machine lacks it, the test is skipped
with a reason of one fixed form, `missing capability: NAME (how to get it)`, so CI can tell a
declared skip from any other. Nothing else may skip.

An extra of the package is a capability too (`openenv_installed`, `mcp_installed`, ...), so the
core's tests run on an install of the core alone. AGENT_ENV_REQUIRE names capabilities that must be
there (a missing one is an error); AGENT_ENV_CORE_ONLY=1 (`make test-core`) allows only the extras
to be missing, so none of the core's own tests is skipped there.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import os
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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


PACKAGE = "agentenv-framework"


def missing_of_extra(extra: str) -> list[str]:
    """The distributions the package's `extra` requires (an extra it includes, too) that are not
    installed, read from the installed package's own metadata."""
    missing = []
    for line in importlib.metadata.requires(PACKAGE) or []:
        requirement = Requirement(line)
        if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
            continue
        if canonicalize_name(requirement.name) == PACKAGE:
            missing += [name for inner in sorted(requirement.extras) for name in missing_of_extra(inner)]
            continue
        try:
            importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(requirement.name)
    return missing


def _extra(name: str) -> Callable[[], bool]:
    return lambda: not missing_of_extra(name)


def _trl_installed() -> bool:
    """The trl extra, TRL with torch, and aiohttp, which AsyncGRPO's rollout worker needs."""
    needed = ("trl", "torch", "transformers", "aiohttp")
    return _extra("trl")() and all(importlib.util.find_spec(name) is not None for name in needed)


def _package_index() -> bool:
    """pip's package index answers (PIP_INDEX_URL, else PyPI): a test that installs from it needs that."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/")
    try:
        with urllib.request.urlopen(f"{index}/pip/", timeout=10) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _bubblewrap() -> bool:
    from agent_env.sandbox._bubblewrap import bubblewrap_for

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
        Capability("openenv_installed", "pip install -e '.[openenv]'", _extra("openenv")),
        Capability("docker_installed", "pip install -e '.[docker]'", _extra("docker")),
        Capability("mcp_installed", "pip install -e '.[mcp]'", _extra("mcp")),
        Capability("users_installed", "pip install -e '.[users]'", _extra("users")),
        Capability("judge_installed", "pip install -e '.[judge]'", _extra("judge")),
        Capability("eval_installed", "pip install -e '.[eval]'", _extra("eval")),
        Capability("dev_installed", "make install (the dev/test tools the lock pins)", _extra("dev")),
        Capability("bubblewrap", "apt-get install bubblewrap (where namespaces are allowed)", _bubblewrap),
        Capability(
            "chromium",
            "apt-get install chromium chromium-driver (Debian's), and selenium (make install)",
            _chromium,
        ),
        Capability("package_index", "reach pip's package index (PIP_INDEX_URL, else PyPI)", _package_index),
    )
}


EXTRAS = frozenset(
    {"openenv_installed", "trl_installed", "docker_installed", "mcp_installed", "users_installed"}
    | {"judge_installed", "eval_installed", "dev_installed"}
)
"""The capabilities that are extras of the package: the only ones a core-only run may lack."""
EVERY_EXTRA = tuple(sorted(EXTRAS))
"""What the whole locked install brings: a test of the lock or of every module needs all of it."""
PACKAGE_EXTRAS = tuple(sorted(EXTRAS - {"dev_installed"}))
"""Every extra of the package's own code: a test that imports every module of it needs them all."""


def extra(area: str) -> str | None:
    """The capability of the package's extra `area` (None for the core)."""
    return None if area == "core" else f"{area}_installed"


@functools.cache
def has(name: str) -> bool:
    """Whether the machine has the capability `name`; AGENT_ENV_REQUIRE lists ones that must be there."""
    return CAPABILITIES[name].check()


def skip_reason(name: str) -> str:
    return f"{SKIP_PREFIX}{name} ({CAPABILITIES[name].how})"


def _names(environment_variable: str) -> set[str]:
    return {n for n in os.environ.get(environment_variable, "").split(",") if n}


def missing_reason(name: str, where: str) -> str | None:
    """None when the machine has `name`; else the skip reason, unless the run requires it (an error)."""
    if name not in CAPABILITIES:
        raise pytest.UsageError(f"{where} needs unknown capability '{name}' ({', '.join(CAPABILITIES)})")
    if has(name):
        return None
    if name in _names("AGENT_ENV_REQUIRE"):
        raise pytest.UsageError(f"capability '{name}' is required here but missing: {CAPABILITIES[name].how}")
    if os.environ.get("AGENT_ENV_CORE_ONLY") == "1" and name not in EXTRAS:
        raise pytest.UsageError(
            f"{where}: the core-only run may skip only the extras' tests, and '{name}' is no extra: "
            f"{CAPABILITIES[name].how}"
        )
    return skip_reason(name)


def apply(item: pytest.Item) -> None:
    """Skip `item` when a capability it needs is missing, for the first one it names that is: an engine
    is not looked for where the extra that reaches it is not installed."""
    for mark in item.iter_markers("needs"):
        for name in mark.args:
            reason = missing_reason(name, item.nodeid)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
                return


def declared_needs(module: Path) -> Iterator[str]:
    """The capabilities a test module's `pytestmark` declares with `needs("NAME", ...)`, read from its
    source, so a module whose imports need an extra is skipped before it is imported."""
    for statement in ast.parse(module.read_bytes(), str(module)).body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in statement.targets
        ):
            for node in ast.walk(statement.value):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "needs":
                    yield from (a.value for a in node.args if isinstance(a, ast.Constant))


class NeedingModule(pytest.Module):
    """A test module that is skipped, not imported, when a capability its `pytestmark` needs is missing."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        for name in declared_needs(self.path):
            reason = missing_reason(name, self.nodeid)
            if reason is not None:
                pytest.skip(reason)
        return list(super().collect())


def located(report: pytest.CollectReport, collector: pytest.Collector) -> pytest.CollectReport:
    """A module's capability skip reported at the module, not at the line here that raised it."""
    if isinstance(collector, NeedingModule) and report.skipped and isinstance(report.longrepr, tuple):
        report.longrepr = (str(collector.path), None, report.longrepr[2])
    return report
