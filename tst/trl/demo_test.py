"""`make demo` (examples/demo.py) runs every stage of the loop end to end: on a small copy of the depot
and cut to a few steps, so it checks the wiring, the tables, the plot, the pass rates and the
trajectories, not the learning (docs/guides/training.md quotes a full run; tst/trl/learning_test.py
the learning)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_env import read_trajectories
from agent_env.eval import EvalResult

ROOT = Path(__file__).resolve().parents[2]
DEPOT = ROOT / "examples" / "depot"
TASKS = {"train": 12, "eval": 6}


def small_depot(to: Path) -> Path:
    """The depot with its first few tasks of each split, and the reference plays of those that have one."""
    shutil.copytree(DEPOT, to, ignore=shutil.ignore_patterns("__pycache__"))
    for split, count in TASKS.items():
        tasks = to / "tasks" / f"{split}.jsonl"
        kept = tasks.read_text().splitlines(keepends=True)[:count]
        tasks.write_text("".join(kept))
        ids = {json.loads(line)["id"] for line in kept}
        solutions = to / "solutions" / f"{split}.jsonl"
        plays = [
            line for line in solutions.read_text().splitlines(keepends=True) if json.loads(line)["id"] in ids
        ]
        solutions.write_text("".join(plays))
    return to


def demo(bundle: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "examples/demo.py", "--bundle", str(bundle), "--out", str(out), *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def run_demo(bundle: Path, out: Path, *options: str) -> list[str]:
    done = demo(bundle, out, *options)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def final_table(lines: list[str]) -> list[str]:
    """The rows of the stage table the demo prints last."""
    header = max(i for i, line in enumerate(lines) if line.startswith("stage") and "held-out split" in line)
    return list(itertools.takewhile(lambda row: row.split() and _score(row.split()[-1]), lines[header + 1 :]))


GRPO_ONLY = ("--grpo-steps", "1", "--pass-rate", "0", "1")


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """The demo, every stage cut short, on a small depot: (the depot, the run's --out, what it printed)."""
    root = tmp_path_factory.mktemp("demo")
    depot, out = small_depot(root / "depot"), root / "demo"
    return depot, out, run_demo(depot, out, "--sft-steps", "4", "--samples", "2", *GRPO_ONLY)


@pytest.mark.timeout(900)
def test_the_demo_fine_tunes_measures_pass_rates_trains_on_the_filter_and_the_curriculum_and_measures_again(
    whole_run: tuple[Path, Path, list[str]],
) -> None:
    _, out, lines = whole_run

    table = final_table(lines)
    assert [row.split()[0] for row in table] == ["untrained", "SFT", "then", "then"]
    assert (out / "sft" / "config.json").is_file(), "the SFT model is kept, for --from"
    assert [" ".join(row.split()[:3]) for row in table[2:]] == ["then GRPO, filter", "then GRPO, curriculum"]
    assert all(_score(cell) for row in table for cell in row.split()[-2:])
    assert f"{TASKS['train']} of {TASKS['train']} train tasks have a pass rate within [0.0, 1.0]" in lines
    steps = next(i for i, line in enumerate(lines) if line.split()[:2] == ["step", "reward"])
    signal = lines[steps].split().index("signal")
    assert _score(lines[steps + 1].split()[signal]), "each GRPO step shows its groups with signal"
    assert any(line.startswith("groups with signal: ") for line in lines)
    assert any(line.startswith("groups with signal on the online curriculum: ") for line in lines)
    assert any(line.startswith("online curriculum of split 'train': ") for line in lines), "its table"

    sampled = EvalResult.read(out / "eval" / "samples")
    measured = [(task.samples, task.pass_rate is not None) for task in sampled.tasks]
    assert measured == [(2, True)] * TASKS["train"]
    assert (out / "demo.png").stat().st_size > 0
    assert list(read_trajectories(out / "training")), "GRPO's episodes are recorded by the server"
    for stage in ("untrained", "sft", "grpo", "grpo-curriculum"):
        for split, count in TASKS.items():
            assert len(list(read_trajectories(out / "eval" / stage / split))) == count


@pytest.mark.timeout(900)
def test_a_run_from_an_earlier_runs_sft_model_and_samples_trains_grpo_without_fine_tuning_or_sampling_again(
    whole_run: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    depot, first, first_lines = whole_run
    out = tmp_path / "again"

    lines = run_demo(depot, out, "--from", str(first), *GRPO_ONLY)

    table = final_table(lines)
    assert [" ".join(row.split()[:3]) for row in table] == [
        "SFT, from demo",
        "then GRPO, filter",
        "then GRPO, curriculum",
    ]
    sft = next(row for row in final_table(first_lines) if row.startswith("SFT"))
    assert table[0].split()[-2:] == sft.split()[-2:], "the SFT scores are the earlier run's"
    assert not any(line.startswith(("== SFT", "== pass rates")) for line in lines), "none trained or sampled"
    samples, tasks = 2 * TASKS["train"], TASKS["train"]
    assert f"pass rates: {samples} samples of {tasks} train tasks, from {first / 'eval' / 'samples'}" in lines
    assert f"{TASKS['train']} of {TASKS['train']} train tasks have a pass rate within [0.0, 1.0]" in lines
    for stage in ("grpo", "grpo-curriculum"):
        assert len(list(read_trajectories(out / "eval" / stage / "eval"))) == TASKS["eval"]
    assert not (out / "sft").exists() and not (out / "eval" / "samples").exists()


@pytest.mark.timeout(900)
def test_a_run_from_a_folder_without_a_whole_run_into_its_own_folder_or_with_sft_options_is_refused(
    whole_run: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    depot, first, _ = whole_run
    before = sorted(first.rglob("*"))

    elsewhere = demo(depot, tmp_path / "out", "--from", str(tmp_path))
    onto_itself = demo(depot, first, "--from", str(first))
    with_its_own_sft = demo(depot, tmp_path / "out", "--from", str(first), "--sft-steps", "8")

    assert elsewhere.returncode == 2
    assert f"--from {tmp_path}: no sft, eval/sft, eval/samples there" in elsewhere.stderr
    assert "pass the --out of a whole run of this demo" in elsewhere.stderr
    assert onto_itself.returncode == 2
    assert "the new run would overwrite the one it starts from" in onto_itself.stderr
    assert with_its_own_sft.returncode == 2
    assert "--sft-steps and --samples are the earlier run's with --from" in with_its_own_sft.stderr
    assert sorted(first.rglob("*")) == before


@pytest.mark.timeout(900)
def test_with_no_task_within_the_pass_rate_bounds_the_demo_says_why_and_skips_grpo(tmp_path: Path) -> None:
    lines = run_demo(
        small_depot(tmp_path / "depot"),
        tmp_path / "demo",
        *("--sft-steps", "1", "--samples", "1", "--pass-rate", "0.5", "0.5"),
    )

    skipped = next(line for line in lines if line.startswith("no GRPO stage: "))
    assert "train longer with --sft-steps, or widen --pass-rate" in skipped
    header = max(i for i, line in enumerate(lines) if line.startswith("stage") and "held-out split" in line)
    assert [row.split()[0] for row in lines[header + 1 : header + 3]] == ["untrained", "SFT"]
    assert not any(line.split()[:2] == ["step", "reward"] for line in lines)


def _score(cell: str) -> bool:
    """Whether a table cell is a score: a number from 0 to 1."""
    try:
        return 0.0 <= float(cell) <= 1.0
    except ValueError:
        return False
