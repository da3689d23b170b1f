"""The workflow that publishes the site to GitHub Pages cannot run here: its YAML parses, it builds
the site with the very `make docs` CI runs (.ci/run) after `make install`, and it deploys only from
main."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.needs("dev_installed")
ROOT = Path(__file__).resolve().parents[3]


def docs_workflow() -> dict[Any, Any]:
    import yaml

    parsed: dict[Any, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / "docs.yml").read_text("utf-8"))
    return parsed


def test_the_pages_workflow_installs_the_lock_then_builds_with_make_docs_and_uploads_site():
    build = docs_workflow()["jobs"]["build"]["steps"]
    runs = [step["run"].strip() for step in build if "run" in step]
    uploaded = next(
        step for step in build if str(step.get("uses", "")).startswith("actions/upload-pages-artifact")
    )

    assert runs == ["make install", "make docs"]
    assert uploaded["with"]["path"] == "site"


def test_the_pages_workflow_deploys_only_pushes_to_main_and_ci_builds_the_same_site():
    parsed = docs_workflow()
    triggers = parsed.get("on", parsed.get(True))  # YAML 1.1 reads a bare `on` as true
    deploy = parsed["jobs"]["deploy"]
    ci = [
        line.strip().removeprefix("timed ") for line in (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    ]

    assert triggers["push"]["branches"] == ["main"]
    assert deploy["needs"] == "build"
    assert "refs/heads/main" in deploy["if"] and "pull_request" in deploy["if"]
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]
    assert ci.index("make docs") == ci.index("make lint") + 1
