"""The README's and Getting started's bundle, written where each page puts its files, runs as the page
says: it checks clean, lists its tasks, every reference play scores 1, and `agent-env serve` serves it
on loopback. The pages' code is read from the pages, so editing them is what is tested; the training,
eval and view commands run in the trl tier (tst/trl/quickstart_test.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tst.support.cli_server import agent_env_serve
from tst.support.documented import QUICKSTART_PAGES, commands, python_blocks, write_files

pytestmark = pytest.mark.needs("openenv_installed")

AGENT_ENV = Path(sys.executable).parent / "agent-env"
HERE = ("check", "tasks", "replay", "serve")
IN_THE_TRL_TIER = ("eval", "view")
PAGES = pytest.mark.parametrize("page", QUICKSTART_PAGES, ids=lambda page: page.name)


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGENT_ENV), *command[1:]], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@PAGES
def test_every_command_and_script_a_quickstart_page_shows_is_one_the_tests_run(page: Path) -> None:
    shown = {command[1] for command in commands(page)}

    assert {"check", "replay", "serve"} <= shown
    assert shown <= {*HERE, *IN_THE_TRL_TIER}
    assert [code for code in python_blocks(page) if "GRPOTrainer(" not in code] == []


@PAGES
def test_a_quickstart_page_s_bundle_checks_clean_and_each_reference_play_scores_1(
    page: Path, tmp_path: Path
) -> None:
    written = write_files(page, tmp_path)
    done = [(command, run(command, tmp_path)) for command in commands(page) if command[1] in HERE[:3]]

    assert {path.relative_to(tmp_path).parts[0] for path in written} == {"shelf"}
    assert [(command, result.returncode, result.stderr) for command, result in done] == [
        (command, 0, "") for command, _ in done
    ]
    replayed = next(result.stdout for command, result in done if command[1] == "replay")
    assert "2 of 2 tasks scored as their reference play expects" in replayed


@PAGES
def test_a_quickstart_page_s_bundle_is_served_on_loopback_as_the_page_runs_it(
    page: Path, tmp_path: Path
) -> None:
    write_files(page, tmp_path)
    [serve] = [command for command in commands(page) if command[1] == "serve"]

    with agent_env_serve(tmp_path / serve[2], *serve[3:], log=tmp_path / "serve.log", tmpdir=tmp_path) as (
        _,
        url,
    ):
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        splits = httpx.get(f"{url}/shelf/splits", timeout=10).json()

    assert "train" in str(splits)
