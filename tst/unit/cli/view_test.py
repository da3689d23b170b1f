"""`agent-env view`, run as a user runs it: it says where it serves, and a folder it cannot show is
one line on stderr and exit status 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from agent_env.testing import FakeTask
from tst.support.tools import add_crate
from tst.support.trajectories import played, write_folder
from tst.support.waiting import until

STARTUP_S = 30.0


def agent_env(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_env.cli", *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_view_of_a_folder_that_does_not_exist_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = agent_env("view", tmp_path / "runs")

    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: {tmp_path / 'runs'} does not exist: pass a folder of trajectory files "
        "(*.jsonl, one trajectory a line, as agent-env serve --record writes them)"
    ]


def test_view_of_a_folder_without_trajectories_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = agent_env("view", tmp_path)

    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"error: {tmp_path} holds no trajectories (0 .jsonl files): pass a folder")


def test_view_serves_the_folder_on_loopback_at_the_url_it_prints(tmp_path: Path) -> None:
    write_folder(tmp_path, [played(FakeTask("shown", tools=[add_crate]), ("end", "done"))])
    (tmp_path / "run.jsonl").open("a").write("garbage\n")
    out = tmp_path / "out.txt"
    with out.open("w") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent_env.cli", "view", str(tmp_path), "--port", "0"],
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
    try:
        assert until(lambda: "serving at" in out.read_text(), STARTUP_S), out.read_text()
        first, second = out.read_text().splitlines()[:2]
        url = re.search(r"at (http://127\.0\.0\.1:\d+/) \(Ctrl-C stops\)", second)
        assert first == f"agent-env view: 1 episode in {tmp_path}, 1 lines skipped"
        assert url is not None
        with urllib.request.urlopen(f"{url[1]}api/episodes", timeout=10) as answer:
            assert [row["task"] for row in json.loads(answer.read())["episodes"]] == ["shown"]
    finally:
        process.terminate()
        process.wait(10)
