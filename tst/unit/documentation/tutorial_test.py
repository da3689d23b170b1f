"""The tutorial's bakery, written from the page's own blocks, runs as the page says: it checks clean,
each reference play scores 1, a person's play of the walk-in gets the simulated customer's answer and
half the score, `agent-env serve` serves it on loopback, `eval --policy` scores the reference plays
and the hasty policy as the page's table shows, and the viewer lists those episodes. The page is read,
so editing it is what is tested; its smoke SFT and GRPO run is in the trl tier
(tst/trl/tutorial_test.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import pytest

from tst.support.cli_server import agent_env_serve
from tst.support.documented import TUTORIAL_PAGE, blocks, commands, python_blocks, session, write_files
from tst.support.waiting import until

AGENT_ENV = Path(sys.executable).parent / "agent-env"
SHOWN = {"check", "tasks", "replay", "play", "serve", "eval", "view"}
STARTED_S = 30.0


def run(command: Sequence[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """An `agent-env` command line of the page, run in `cwd` as a reader runs it."""
    return subprocess.run(
        [str(AGENT_ENV), *command[1:]],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def output_block(first: str) -> list[str]:
    """The rows of the page's output block that starts with `first`, each as `rows` words them."""
    [block] = [b.code for b in blocks(TUTORIAL_PAGE) if b.language == "text" and b.code.startswith(first)]
    return rows(block)


def rows(text: str) -> list[str]:
    """A table's lines, each with its seconds (the one column that differs run to run) left out and
    its spaces made one."""
    return [" ".join(re.sub(r"\d+\.\d+(?=\s*(ok)?$)", "S", line).split()) for line in text.splitlines()]


def mean_scores(results: Path) -> dict[str, float]:
    """Each task's mean score in an eval's results.json, by its id."""
    return {task["id"]: task["mean_score"] for task in json.loads(results.read_text())["tasks"]}


@pytest.fixture(scope="module")
def bakery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder a reader works in: the page's files written where their titles say."""
    folder = tmp_path_factory.mktemp("tutorial")
    write_files(TUTORIAL_PAGE, folder)
    return folder


@pytest.fixture(scope="module")
def evaluated(bakery: Path) -> list[subprocess.CompletedProcess[str]]:
    """The page's `agent-env eval` commands, run in order."""
    return [run(command, bakery) for command in commands(TUTORIAL_PAGE) if command[1] == "eval"]


def test_every_command_and_file_the_tutorial_shows_is_one_its_tests_run() -> None:
    written = {b.title.split("/")[0] for b in blocks(TUTORIAL_PAGE) if b.title is not None}
    lines = [line for b in blocks(TUTORIAL_PAGE) if b.language == "bash" for line in b.code.splitlines()]

    assert [line for line in lines if not line.startswith(("agent-env ", "python "))] == []
    assert python_blocks(TUTORIAL_PAGE) == []  # every Python block is a file the tests write
    assert {command[1] for command in commands(TUTORIAL_PAGE)} == SHOWN
    assert [" ".join(command) for command in commands(TUTORIAL_PAGE, "python")] == ["python train.py"]
    assert written == {"bakery", "hasty.py", "train.py"}


def test_the_tutorial_s_bundle_checks_clean_and_lists_the_walk_in_as_one_turn_then_the_user(
    bakery: Path,
) -> None:
    [check] = [run(command, bakery) for command in commands(TUTORIAL_PAGE) if command[1] == "check"]
    [listed] = [run(command, bakery) for command in commands(TUTORIAL_PAGE) if command[1] == "tasks"]

    assert (check.returncode, check.stderr) == (0, "")
    assert check.stdout.strip() == "bakery: ok: 1 envs, 1 agents, tasks: train 2"
    assert check.stdout.strip() in TUTORIAL_PAGE.read_text(encoding="utf-8")
    assert listed.returncode == 0
    assert rows(listed.stdout)[2:] == [
        "train 0 rye-for-ben orders+bash 1",
        "train 1 walk-in orders+bash 1+user<=3",
    ]


def test_each_reference_play_of_the_tutorial_scores_1_with_the_simulated_customer_answering(
    bakery: Path,
) -> None:
    [replay] = [run(command, bakery) for command in commands(TUTORIAL_PAGE) if command[1] == "replay"]

    assert (replay.returncode, replay.stderr) == (0, "")
    assert rows(replay.stdout)[:4] == output_block("split  index")
    assert "2 of 2 tasks scored as their reference play expects" in replay.stdout


def test_playing_the_walk_in_as_the_tutorial_shows_gets_the_customer_s_answer_and_half_the_score(
    bakery: Path,
) -> None:
    [play] = [command for command in commands(TUTORIAL_PAGE) if command[1] == "play"]
    typed, printed = session(TUTORIAL_PAGE)

    played = run(play, bakery, stdin="".join(f"{line}\n" for line in typed))

    assert (played.returncode, played.stderr) == (0, "")
    lines = [re.sub(r"^(> )+", "", line) for line in played.stdout.splitlines()]
    at = 0
    for line in printed:  # each line the page shows, in the page's order
        assert line in lines[at:], f"{line!r} is not printed after {lines[at - 1]!r}:\n{played.stdout}"
        at = lines.index(line, at) + 1
    assert printed[-1] == "score: 0.50"


@pytest.mark.needs("openenv_installed")
def test_the_tutorial_s_bundle_is_served_on_loopback_as_the_page_runs_it(bakery: Path) -> None:
    [serve] = [command for command in commands(TUTORIAL_PAGE) if command[1] == "serve"]

    with agent_env_serve(bakery / serve[2], *serve[3:], log=bakery / "serve.log", tmpdir=bakery) as (_, url):
        with urllib.request.urlopen(f"{url}/health", timeout=10) as answer:
            health = answer.status
        with urllib.request.urlopen(f"{url}/bakery/splits", timeout=10) as answer:
            splits = json.loads(answer.read())

    assert url.startswith("http://127.0.0.1:")
    assert health == 200
    assert splits == [{"name": "train", "type": "train"}]


@pytest.mark.needs("eval_installed")
def test_eval_scores_each_reference_play_1_and_the_hasty_policy_half_of_ben_s_task_as_the_page_shows(
    bakery: Path, evaluated: list[subprocess.CompletedProcess[str]]
) -> None:
    reference, hasty = evaluated
    scores = {out: mean_scores(bakery / out / "results.json") for out in ("runs/reference", "runs/hasty")}

    assert [(done.returncode, re.split(r"[\r\n]+", done.stderr.strip())[-1]) for done in evaluated] == [
        (0, "eval: 2/2 episodes, mean score 1.00, 0 errors"),
        (0, "eval: 2/2 episodes, mean score 0.25, 0 errors"),
    ]
    assert rows(hasty.stdout)[:5] == output_block("index  id")
    assert "all 2 tasks 2 1.00 - - - 1.00 1.00 0 0 -" in rows(reference.stdout)
    assert scores == {
        "runs/reference": {"rye-for-ben": 1.0, "walk-in": 1.0},
        "runs/hasty": {"rye-for-ben": 0.5, "walk-in": 0.0},
    }


@pytest.mark.needs("eval_installed")
def test_the_viewer_lists_the_hasty_policy_s_episodes_with_their_scores(
    bakery: Path, evaluated: list[subprocess.CompletedProcess[str]]
) -> None:
    [view] = [command for command in commands(TUTORIAL_PAGE) if command[1] == "view"]
    printed = bakery / "view.out"

    with printed.open("w") as stdout:
        viewer = subprocess.Popen(
            [str(AGENT_ENV), *view[1:], "--port", "0"], cwd=bakery, stdout=stdout, stderr=subprocess.PIPE
        )
    try:
        assert until(lambda: "serving at" in printed.read_text(), STARTED_S), printed.read_text()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", printed.read_text())
        assert url is not None
        with urllib.request.urlopen(f"{url[1]}api/episodes", timeout=10) as answer:
            episodes = json.loads(answer.read())["episodes"]
    finally:
        viewer.terminate()
        viewer.wait(10)

    assert sorted((episode["task"], episode["score"]) for episode in episodes) == [
        ("rye-for-ben", 0.5),
        ("walk-in", 0.0),
    ]
