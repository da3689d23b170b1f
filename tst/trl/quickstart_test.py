"""The README's and Getting started's GRPO snippet runs as the page shows it, on the CPU and offline:
the model it names is a folder of the tiny Qwen3 the demo builds (a name `from_pretrained` finds on
disk first), so `GRPOTrainer` trains it on the page's own bundle through `AgentEnv.local` and saves it.
Getting started then measures the saved model with `agent-env eval` and shows the episodes with
`agent-env view`, as its commands say (the view on a free loopback port)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from examples.train_grpo import tiny_model_and_tokenizer
from tst.support.documented import QUICKSTART_PAGES, commands, python_blocks, write_files
from tst.support.waiting import until

AGENT_ENV = Path(sys.executable).parent / "agent-env"
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRL_EXPERIMENTAL_SILENCE": "1",
}
STARTED_S = 30.0
TRAINED_S = 600


def offline() -> dict[str, str]:
    return {**os.environ, **OFFLINE}


def the_named_model_is_the_tiny_one(snippet: str, folder: Path) -> Path:
    """The snippet's `model="NAME"`, made a folder NAME under `folder` holding the tiny model."""
    found = re.search(r'model="([^"]+)"', snippet)
    assert found, 'the snippet names its model as model="..."'
    model, tokenizer = tiny_model_and_tokenizer()
    model.save_pretrained(folder / found[1])
    tokenizer.save_pretrained(folder / found[1])
    return folder / found[1]


def trained(page: Path, folder: Path) -> str:
    """The page's bundle written and its GRPO snippet run in `folder`; what it printed."""
    write_files(page, folder)
    [snippet] = python_blocks(page)
    the_named_model_is_the_tiny_one(snippet, folder)
    done = subprocess.run(
        [sys.executable, "-c", snippet],
        cwd=folder,
        env=offline(),
        capture_output=True,
        text=True,
        timeout=TRAINED_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.timeout(TRAINED_S + 60)
@pytest.mark.parametrize("page", QUICKSTART_PAGES[:1], ids=lambda page: page.name)
def test_the_readme_s_grpo_snippet_trains_on_its_bundle_offline_and_saves_the_model(
    page: Path, tmp_path: Path
) -> None:
    printed = trained(page, tmp_path)

    assert "'rewards/shelf/mean'" in printed  # the environment's reward, logged per toolset
    assert (tmp_path / "runs" / "grpo" / "model.safetensors").is_file()


@pytest.mark.timeout(TRAINED_S + 180)
def test_getting_started_trains_then_evaluates_the_saved_model_and_views_its_episodes(tmp_path: Path) -> None:
    page = QUICKSTART_PAGES[1]
    printed = trained(page, tmp_path)
    [evaluate] = [command for command in commands(page) if command[1] == "eval"]
    [view] = [command for command in commands(page) if command[1] == "view"]

    measured = subprocess.run(
        [str(AGENT_ENV), *evaluate[1:]],
        cwd=tmp_path,
        env=offline(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    results = json.loads((tmp_path / evaluate[evaluate.index("--out") + 1] / "results.json").read_text())
    shown = tmp_path / "view.out"
    with shown.open("w") as stdout:
        viewer = subprocess.Popen(
            [str(AGENT_ENV), *view[1:], "--port", "0"], cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE
        )
    try:
        assert until(lambda: "serving at" in shown.read_text(), STARTED_S), shown.read_text()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", shown.read_text())
        assert url is not None
        with urllib.request.urlopen(f"{url[1]}api/episodes", timeout=10) as answer:
            episodes = json.loads(answer.read())["episodes"]
    finally:
        viewer.terminate()
        viewer.wait(10)

    assert "'rewards/shelf/mean'" in printed
    assert measured.returncode == 0, measured.stderr[-3000:]
    assert "2 tasks" in measured.stdout
    assert [task["id"] for task in results["tasks"]] == ["tea", "rice"]
    assert sorted(episode["task"] for episode in episodes) == ["rice", "tea"]
