"""The skip policy, run as CI runs it: run-tier.sh writes a report, check_skips.py judges it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RUN_TIER = ROOT / "tst" / "util" / "run-tier.sh"
CHECK = ROOT / "tst" / "util" / "check_skips.py"


def run_tier(tmp_path: Path, source: str) -> Path:
    """Run a one-file tier through run-tier.sh with AGENT_ENV_REPORTS set; returns the reports folder."""
    tier = tmp_path / "tier"
    tier.mkdir()
    (tier / "x_test.py").write_text(textwrap.dedent(source))
    reports = tmp_path / "reports"
    subprocess.run(
        ["bash", str(RUN_TIER), "tier", str(tier), "-q", "-p", "no:cacheprovider", f"--rootdir={tmp_path}"],
        cwd=tmp_path,
        env={**os.environ, "AGENT_ENV_REPORTS": str(reports), "PYTHON": sys.executable},
        capture_output=True,
        check=False,
        timeout=120,
    )
    return reports


def check(*reports: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECK), *map(str, reports)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_a_tier_that_ran_every_test_passes_the_skip_check(tmp_path: Path) -> None:
    reports = run_tier(tmp_path, "def test_one():\n    pass\n\ndef test_two():\n    pass\n")

    done = check(*reports.glob("*.xml"))

    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(": 2 tests, 0 skipped\n")


def test_a_skip_of_any_kind_fails_the_check_naming_the_test_and_its_reason(tmp_path: Path) -> None:
    reports = run_tier(
        tmp_path,
        """
        import pytest

        def test_runs():
            pass

        @pytest.mark.skip(reason="missing capability: docker_engine (start one)")
        def test_declared():
            pass

        def test_inline():
            pytest.skip("flaky today")
        """,
    )

    done = check(*reports.glob("*.xml"))

    assert done.returncode == 1
    assert "x_test::test_declared: missing capability: docker_engine (start one)" in done.stderr
    assert "x_test::test_inline: flaky today" in done.stderr
    assert ": 3 tests, 2 skipped" in done.stdout


def test_a_report_with_no_test_or_no_report_at_all_fails_the_check(tmp_path: Path) -> None:
    reports = run_tier(tmp_path, "x = 1\n")

    assert check(*reports.glob("*.xml")).returncode == 1
    assert "no test ran" in check(*reports.glob("*.xml")).stderr
    assert "no such report" in check(tmp_path / "missing.xml").stderr
    assert "no report given" in check().stderr
