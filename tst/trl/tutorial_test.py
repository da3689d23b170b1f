"""The tutorial's smoke run, `python train.py` as the page writes it, on the CPU and offline: the tiny
model built from the bakery's own texts takes two SFT steps on its reference plays, then a GRPO step
whose rollouts the bundle plays and scores, and is saved. It runs in this process (the script's
imports are the tier's own), in the folder the page's files are written to."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

from tst.support.documented import TUTORIAL_PAGE, commands, write_files  # noqa: E402


def test_the_tutorial_s_smoke_run_takes_two_sft_steps_then_a_grpo_step_on_the_bakery_and_saves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(TUTORIAL_PAGE, tmp_path)
    [[_, script]] = commands(TUTORIAL_PAGE, "python")
    monkeypatch.chdir(tmp_path)

    ran = runpy.run_path(script, run_name="__main__")

    sft, grpo = ran["sft"], ran["grpo"]
    assert sft.state.global_step == 2
    assert len(sft.train_dataset) == 2  # the two reference plays, the walk-in's customer included
    assert grpo.state.global_step == 1
    assert "rewards/orders+bash/mean" in grpo.state.log_history[0]  # the bundle's reward, per toolset
    assert (tmp_path / "runs" / "grpo" / "model.safetensors").is_file()
