"""`make demo` (examples/demo.py) runs its four stages end to end: cut to a few steps, so it checks the
wiring, the table, the plot and the trajectories, not the learning (README quotes a full run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_env import read_trajectories

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(900)
def test_the_demo_evaluates_fine_tunes_trains_and_evaluates_again_printing_a_table_and_a_plot(
    tmp_path: Path,
) -> None:
    out = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "examples/demo.py", "--sft-steps", "4", "--grpo-steps", "1", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("stage") and "train split" in line)
    table = lines[header + 1 : header + 4]
    assert [row.split()[0] for row in table] == ["untrained", "SFT", "then"]
    assert all(len(row.split()) >= 3 and all(_score(cell) for cell in row.split()[-2:]) for row in table)
    steps = next(i for i, line in enumerate(lines) if line.split()[:2] == ["step", "reward"])
    signal = lines[steps].split().index("signal")
    assert 0.0 <= float(lines[steps + 1].split()[signal]) <= 1.0, (
        "each GRPO step shows its groups with signal"
    )
    assert (out / "demo.png").stat().st_size > 0
    assert list(read_trajectories(out / "training")), "GRPO's episodes are recorded by the server"
    for stage in ("untrained", "sft", "grpo"):
        assert len(list(read_trajectories(out / "eval" / stage / "train"))) == 33


def _score(cell: str) -> bool:
    """Whether a table cell is a score: a number from 0 to 1."""
    try:
        return 0.0 <= float(cell) <= 1.0
    except ValueError:
        return False
