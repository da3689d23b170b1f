"""What a Harbor task's test.sh prints, kept: a test.sh that cannot fetch its tools and writes 0 leaves
its output's last lines in the recorded trajectory and below `agent-env replay`'s table, and one that
writes no reward leaves them in the unscorable episode's error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env import read_trajectories
from agent_env.cli import main
from agent_env.openenv import AgentEnvAction, BackgroundServer, build_app
from tst.support.waiting import until

CLIENT_TIMEOUT_S = 60.0
SAID = (
    "Installing uv\ncurl: (6) Could not resolve host: astral.sh\n"
    "/tests/test.sh: line 6: uvx: command not found"
)


def harbor_task(folder: Path, test_sh: str) -> None:
    """A Harbor task whose solve.sh does the work and whose test.sh is `test_sh`."""
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "instruction.md").write_text("Write hello into /app/greeting.txt.\n")
    (folder / "task.toml").write_text(
        "[verifier]\ntimeout_sec = 30.0\n\n[environment]\nallow_internet = false\n"
    )
    (folder / "environment" / "Dockerfile").write_text("FROM agent-env-sandbox:latest\nWORKDIR /app\n")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\necho hello > /app/greeting.txt\n")
    (folder / "tests" / "test.sh").write_text(test_sh)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dataset")
    harbor_task(  # as a real test.sh without network: its own tools never arrive, and it writes 0
        root / "fetch-uv",
        "#!/bin/bash\n"
        "printf '\\033[1mInstalling uv\\033[0m\\r\\n'\n"
        "curl -LsSf https://astral.sh/uv/install.sh -o /tmp/install.sh 2>/dev/null "
        "|| echo 'curl: (6) Could not resolve host: astral.sh' >&2\n"
        "mkdir -p /logs/verifier\n"
        "source $HOME/.local/bin/env 2>/dev/null\n"
        "uvx pytest /tests/test_outputs.py || echo 0 > /logs/verifier/reward.txt\n",
    )
    harbor_task(root / "no-reward", "#!/bin/bash\necho 'collected 3 items'\necho '3 passed in 0.01s'\n")
    return root


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trajectories")


@pytest.fixture(scope="module")
def server(dataset: Path, record: Path) -> Iterator[BackgroundServer]:
    served = BackgroundServer(build_app(dataset, record=record)).start()
    yield served
    served.stop()


def test_a_0_from_a_test_sh_that_could_not_fetch_its_tools_is_recorded_with_what_it_printed(
    server: BackgroundServer, connect: Any, record: Path
):
    client = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)
    first = client.reset(split="train", index=0, timeout_s=CLIENT_TIMEOUT_S)
    assert first.observation["task_id"] == "fetch-uv"

    scored = client.step(AgentEnvAction.end_turn("done").wire())

    assert (scored.done, scored.reward) == (True, 0.0)
    assert until(lambda: any(t.task.id == "fetch-uv" for t in read_trajectories(record)), 30)
    [played] = [t for t in read_trajectories(record) if t.task.id == "fetch-uv"]
    [verifier] = played.verifiers
    assert (verifier.type, verifier.score, verifier.detail) == ("test_script", 0.0, SAID)


def test_replay_shows_the_test_sh_output_below_a_wrong_play_and_an_unscorable_one_s_in_its_error(
    dataset: Path, capsys: pytest.CaptureFixture[str]
):
    replayed = main(["replay", str(dataset)])
    out = capsys.readouterr().out

    assert replayed == 1
    lines = out.splitlines()
    rows = {line.split()[2]: line for line in lines[2:4]}
    assert rows["fetch-uv"].split()[5:7] + rows["fetch-uv"].split()[8:] == ["0.00", "1.00", "WRONG"]
    assert rows["no-reward"].endswith("test.sh's output ends:")
    wrong = lines.index("  train/0 fetch-uv: verifiers[0] (test_script): 0")
    assert lines[wrong + 1 : wrong + 5] == [
        "    verifiers[0] (test_script) said:",
        *(f"      {line}" for line in SAID.split("\n")),
    ]
    failed = lines.index("each failed one's error in full:")
    assert lines[failed + 1].startswith(
        "  train/1 no-reward: task 'no-reward' is unscorable: test.sh wrote neither"
    )
    assert lines[failed + 2 : failed + 5] == [
        "      collected 3 items",
        "      3 passed in 0.01s",
        "    (an unscorable episode has no reward, never 0) (code: VERIFIER_FAILED)",
    ]
    assert "0 of 2 tasks scored as their reference play expects" in out
