"""Fail a CI run whose pytest reports skipped any test: in CI, every tier must run in full.

    python tst/util/check_skips.py REPORT.xml [REPORT.xml ...]

Each REPORT is a JUnit XML report that `tst/util/run-tier.sh` writes when AGENT_ENV_REPORTS names a
folder. A declared capability skip (`missing capability: NAME (how)`) is fine on a developer's
machine, but CI can provide every capability, so any skip, declared or not, fails here, and so does
a report that ran no test. Exit status: 0 when every report ran tests and skipped none, else 1.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Skip:
    test: str
    reason: str


def skips(report: Path) -> tuple[int, list[Skip]]:
    """How many tests the report holds, and every one it skipped (xfail included), with its reason."""
    root = ElementTree.parse(report).getroot()
    cases = list(root.iter("testcase"))
    found = []
    for case in cases:
        for skipped in case.findall("skipped"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            found.append(Skip(name, skipped.get("message", "") or (skipped.text or "").strip()))
    return len(cases), found


def main(reports: list[str]) -> int:
    if not reports:
        print(
            "check_skips: no report given (set AGENT_ENV_REPORTS before running the tiers)", file=sys.stderr
        )
        return 1
    failed = False
    for report in map(Path, reports):
        if not report.is_file():
            print(f"check_skips: {report}: no such report", file=sys.stderr)
            failed = True
            continue
        total, skipped = skips(report)
        if total == 0:
            print(f"check_skips: {report}: no test ran", file=sys.stderr)
            failed = True
        for skip in skipped:
            print(f"check_skips: {report.name}: skipped {skip.test}: {skip.reason}", file=sys.stderr)
        failed = failed or bool(skipped)
        print(f"check_skips: {report.name}: {total} tests, {len(skipped)} skipped")
    if failed:
        print("check_skips: a tier that must not skip did; give the machine what it lacks", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
