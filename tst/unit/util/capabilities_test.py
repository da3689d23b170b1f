import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from tst.util import capabilities

ROOT = Path(__file__).resolve().parents[3]
NEEDS_A_BROWSER = """
    import pytest

    import a_module_no_machine_has

    pytestmark = pytest.mark.needs("chromium")


    def test_in_a_browser():
        pass
"""


class FakeItem:
    """Just what `capabilities.apply` reads and writes of a collected test."""

    nodeid = "tst/x_test.py::test_x"

    def __init__(self, *needed):
        self.marks = [pytest.mark.needs(*needed).mark]

    def iter_markers(self, name):
        return [m for m in self.marks if m.name == name]

    def add_marker(self, marker):
        self.marks.append(marker.mark)

    @property
    def skip_reasons(self):
        return [m.kwargs["reason"] for m in self.marks if m.name == "skip"]


@pytest.fixture
def machine(monkeypatch):
    present = set()
    monkeypatch.setattr(capabilities, "has", lambda name: name in present)
    monkeypatch.delenv("AGENT_ENV_REQUIRE", raising=False)
    monkeypatch.delenv("AGENT_ENV_CORE_ONLY", raising=False)
    return present


def test_a_test_needing_a_missing_capability_is_skipped_with_the_one_fixed_reason_naming_it(machine):
    item = FakeItem("docker_engine")

    capabilities.apply(item)

    assert item.skip_reasons == [
        "missing capability: docker_engine (start a Docker engine: see ../shared/reference/docker-engine.md)"
    ]


def test_a_test_needing_a_capability_the_machine_has_runs(machine):
    machine.add("trl_installed")
    item = FakeItem("trl_installed")

    capabilities.apply(item)

    assert item.skip_reasons == []


def test_a_test_needing_an_unknown_capability_is_a_usage_error_naming_the_known_ones(machine):
    with pytest.raises(pytest.UsageError, match=r"unknown capability 'gpu'.*docker_engine"):
        capabilities.apply(FakeItem("gpu"))


def test_a_capability_ci_requires_is_an_error_when_missing_rather_than_a_skip(machine, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_REQUIRE", "docker_engine")

    with pytest.raises(pytest.UsageError, match="'docker_engine' is required here but missing"):
        capabilities.apply(FakeItem("docker_engine"))


def test_the_page_tests_need_chromium_and_say_how_to_get_it_when_it_is_missing(machine):
    item = FakeItem("chromium")

    capabilities.apply(item)

    assert item.skip_reasons == [
        "missing capability: chromium (apt-get install chromium chromium-driver (Debian's), and selenium "
        "(make install))"
    ]


RULES = {"AGENT_ENV_REQUIRE", "AGENT_ENV_CORE_ONLY"}
"""The variables that decide what may skip: this run's (CI's) are not passed on, each case sets its own."""


def run_pytest(tmp_path: Path, source: str, **environment: str) -> subprocess.CompletedProcess[str]:
    """Run pytest, with the project's conftest, on the module beside one that needs nothing, on a machine
    without chromium."""
    (tmp_path / "x_test.py").write_text(textwrap.dedent(source))
    (tmp_path / "core_test.py").write_text("def test_core():\n    pass\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tst.conftest", "-q", "-rs", "-p", "no:cacheprovider", "."],
        cwd=tmp_path,
        env={
            **{name: value for name, value in os.environ.items() if name not in RULES},
            **{"PYTHONPATH": str(ROOT), "AGENT_ENV_CHROMIUM": "/nowhere/chromium"},
            **environment,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_module_whose_imports_need_a_missing_capability_is_skipped_at_the_module_not_imported(tmp_path):
    done = run_pytest(tmp_path, NEEDS_A_BROWSER)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "SKIPPED [1] x_test.py: missing capability: chromium (apt-get install chromium" in done.stdout
    assert "1 passed, 1 skipped" in done.stdout


def test_a_module_whose_capability_the_run_requires_is_an_error_not_a_skip(tmp_path):
    done = run_pytest(tmp_path, NEEDS_A_BROWSER, AGENT_ENV_REQUIRE="chromium")

    assert done.returncode != 0
    assert "capability 'chromium' is required here but missing" in done.stdout + done.stderr


def test_the_core_only_run_refuses_to_skip_a_test_for_a_capability_that_is_no_extra(tmp_path):
    done = run_pytest(tmp_path, NEEDS_A_BROWSER, AGENT_ENV_CORE_ONLY="1")

    assert done.returncode != 0
    assert "the core-only run may skip only the extras' tests, and 'chromium' is no extra" in (
        done.stdout + done.stderr
    )


@pytest.mark.parametrize("extra", ["openenv", "trl", "docker", "mcp", "users", "eval", "dev"])
def test_the_core_only_run_skips_an_extra_s_test_naming_its_install_line(machine, monkeypatch, extra):
    monkeypatch.setenv("AGENT_ENV_CORE_ONLY", "1")
    item = FakeItem(f"{extra}_installed")

    capabilities.apply(item)

    assert len(item.skip_reasons) == 1
    assert item.skip_reasons[0].startswith(f"missing capability: {extra}_installed (")
    assert "make install" in item.skip_reasons[0] or f"pip install -e '.[{extra}]'" in item.skip_reasons[0]


def test_every_extra_pyproject_declares_is_a_capability():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

    extras = pyproject["project"]["optional-dependencies"]
    assert sorted(capabilities.EXTRAS) == sorted(capabilities.extra(name) for name in extras)


def test_the_core_only_run_skips_a_test_for_its_missing_extra_without_asking_for_the_engine_it_reaches(
    machine, monkeypatch
):
    monkeypatch.setenv("AGENT_ENV_CORE_ONLY", "1")
    item = FakeItem("docker_installed", "docker_engine")

    capabilities.apply(item)

    assert item.skip_reasons == ["missing capability: docker_installed (pip install -e '.[docker]')"]
