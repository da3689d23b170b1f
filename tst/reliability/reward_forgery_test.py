"""A model that forges its own reward, as RL would teach one to: each probe is one `bash` call of the
agent's in a Harbor task's container (root, a writable root filesystem), then the end of its turn,
against a real server on loopback. Before the seal (`agent_env.sandbox._sealing`), the probes that
replace the shell, the interpreter or the tools' environment the test uses scored 1.0 on a task
whose work was not done; the preloaded library, bash's startup files and the conftest.py forge a
reward on images with dynamically linked programs, an interactive or login shell in the test, or
pytest, which this small image has not."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env.openenv import AgentEnvAction, BackgroundServer, build_app
from tst.support.harbor_tasks import GUARDED

pytestmark = pytest.mark.needs("docker_engine")

TIMEOUT_S = 60.0
CHECKED, INSTALLS = 0, 1
SHIM = r"mkdir -p $(dirname {path}) && printf '#!/bin/bash\nexit 0\n' > {path} && chmod 755 {path}"
FORGED_REWARD = "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; exit 0"

PROBES = {
    "the shell test.sh runs with, replaced": (
        'mv /bin/bash /bin/realbash; printf \'#!/bin/realbash\\nif [ "$1" = /tests/test.sh ]; then '
        "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; exit 0; fi\\n"
        'exec /bin/realbash "$@"\\n\' > /bin/bash; chmod 755 /bin/bash',
        ["/bin/bash (changed)", "/bin/realbash (added)"],
    ),
    "the interpreter the test runs, replaced": (
        SHIM.format(path="/usr/bin/python3"),
        ["/usr/bin/python3 (changed)"],
    ),
    "a program shadowing the test's earlier in PATH": (
        SHIM.format(path="/usr/local/bin/python3"),
        ["/usr/local/bin/python3 (added)"],
    ),
    "a library preloaded into every program": (
        "echo /tmp/forge.so > /etc/ld.so.preload",
        ["/etc/ld.so.preload (added)"],
    ),
    "bash's startup files and BASH_ENV": (
        f"echo '{FORGED_REWARD}' > /etc/bash.bashrc; echo 'export BASH_ENV=/etc/bash.bashrc' >> /etc/profile",
        ["/etc/bash.bashrc (added)", "/etc/profile (added)"],
    ),
    "the tools' environment test.sh sources from the home": (
        "mkdir -p ~/.local/bin; echo 'python3() { return 0; }' > ~/.local/bin/env",
        ["/root/.local/bin/env (added)"],
    ),
    "a conftest.py where pytest looks for one": (
        "echo 'import pytest' > /conftest.py",
        ["/conftest.py (added)"],
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    served = BackgroundServer(build_app(GUARDED)).start()
    yield served
    served.stop()


def play(connect: Any, server: BackgroundServer, index: int, command: str) -> Any:
    """The agent's one command, then the end of its turn: what the trainer sees."""
    client = connect(server.url, message_timeout_s=TIMEOUT_S)
    client.reset(split="train", index=index, timeout_s=TIMEOUT_S)
    ran = client.step(AgentEnvAction.call_tool("bash", {"command": command}).wire())
    assert ran.observation["error"] is None, ran.observation
    return client.step(AgentEnvAction.end_turn("done").wire())


@pytest.mark.parametrize("probe", list(PROBES))
def test_an_agent_that_changes_what_its_verifier_runs_gets_no_reward_and_the_changed_paths_are_the_reason(
    server: BackgroundServer, connect: Any, probe: str
):
    command, named = PROBES[probe]

    scored = play(connect, server, CHECKED, command)

    assert scored.done and scored.reward is None
    error = scored.observation["error"]
    assert error["code"] == "SYSTEM_CHANGED", error
    for path in named:
        assert path in error["message"]


def test_the_task_done_scores_1_and_not_done_scores_0_whatever_python_left_in_the_systems_folders(
    server: BackgroundServer, connect: Any
):
    bytecode = (
        "mkdir -p /usr/lib/python3/__pycache__ && echo x > /usr/lib/python3/__pycache__/os.cpython-311.pyc"
    )

    done = play(connect, server, CHECKED, f"echo hello > /app/greeting.txt; {bytecode}")
    undone = play(connect, server, CHECKED, f"echo hi > /app/greeting.txt; {bytecode}; mkdir -p ~/.cache/pip")

    assert (done.done, done.reward, done.observation["error"]) == (True, 1.0, None)
    assert (undone.done, undone.reward, undone.observation["error"]) == (True, 0.0, None)


def test_a_task_that_declares_the_system_folder_its_work_changes_is_scored_and_any_other_change_is_not(
    server: BackgroundServer, connect: Any
):
    install = "mkdir -p /usr/local/lib/greeter && echo hello > /usr/local/lib/greeter/greeting.txt"

    installed = play(connect, server, INSTALLS, install)
    overreached = play(connect, server, INSTALLS, f"{install}; {SHIM.format(path='/usr/local/bin/grep')}")

    assert (installed.done, installed.reward, installed.observation["error"]) == (True, 1.0, None)
    assert overreached.reward is None
    assert overreached.observation["error"]["code"] == "SYSTEM_CHANGED"
    assert "/usr/local/bin/grep (added)" in overreached.observation["error"]["message"]
    assert "/usr/local/lib/greeter" not in overreached.observation["error"]["message"]


def test_a_bash_verifier_in_a_docker_sandbox_of_its_own_image_is_not_fooled_by_a_replaced_command(
    tmp_path: Path, connect: Any
):
    bundle = tmp_path / "bundle"
    (bundle / "tasks").mkdir(parents=True)
    (bundle / "envs").mkdir()
    (bundle / "bundle.toml").write_text(
        textwrap.dedent(
            """
            [sandbox]
            provider = "docker"
            workdir = "/work"
            user = "0:0"

            [agents.clerk]
            bash = true
            """
        )
    )
    task = (
        '{"id": "greet", "agent": "clerk", "turns": ["Write hello to greeting.txt."], '
        '"verifiers": [{"type": "bash", "command": "grep -qx hello greeting.txt"}]}\n'
    )
    (bundle / "tasks" / "train.jsonl").write_text(task)
    served = BackgroundServer(build_app(bundle)).start()
    try:
        forged = play(connect, served, 0, SHIM.format(path="/usr/local/bin/grep"))
        honest = play(connect, served, 0, "echo hello > greeting.txt")
    finally:
        served.stop()

    assert forged.reward is None
    assert forged.observation["error"]["code"] == "SYSTEM_CHANGED"
    assert "/usr/local/bin/grep (added)" in forged.observation["error"]["message"]
    assert (honest.reward, honest.observation["error"]) == (1.0, None)


def test_replay_of_a_reference_play_that_changes_an_undeclared_system_folder_says_it_is_unscorable_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from agent_env.cli import main

    dataset = tmp_path / "dataset"
    shutil.copytree(GUARDED / "installs", dataset / "installs")
    toml = dataset / "installs" / "task.toml"
    toml.write_text(toml.read_text().replace('may_change = ["/usr/local/lib/greeter"]', ""))

    code = main(["replay", str(dataset)])

    out = capsys.readouterr().out
    assert code != 0
    assert "SYSTEM_CHANGED" in out
    assert "/usr/local/lib/greeter/greeting.txt (added)" in out
