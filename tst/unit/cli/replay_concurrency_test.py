"""`agent-env replay --concurrency N`: tasks played at once, the table in the tasks' order whatever
order they ended in, each task's time shown, and the exit code of a play that scores wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tst.support.bundles import make_bundle

TOML = """
[sandbox]
isolation = "none"

[agents.clerk]
envs = []
bash = true
"""
AT_ONCE = 4
WAIT = "for i in $(seq 400); do {test} && break; sleep 0.05; done"
"""A bounded wait (20 s) in a play's command: past it, the play goes on and scores wrong."""


def relay_bundle(root: Path, shared: Path) -> Path:
    """Tasks relay-0..3, each of whose reference plays waits until all four have started, then until
    the next one has ended: played at once, they end in reverse order. Then `idle`, whose play does
    nothing, and scores 0 where 1 is expected."""
    tasks, solutions = [], []
    for n in range(AT_ONCE):
        started = WAIT.format(test=f'[ "$(ls {shared} | grep -c started)" -ge {AT_ONCE} ]')
        after = WAIT.format(test=f"[ -e {shared}/ended-{n + 1} ]") if n + 1 < AT_ONCE else ":"
        command = (
            f"touch {shared}/started-{n}; {started}; {after}; echo done > out.txt; touch {shared}/ended-{n}"
        )
        tasks.append(
            {
                "id": f"relay-{n}",
                "agent": "clerk",
                "turns": ["Write done to out.txt."],
                "verifiers": [{"type": "bash", "command": "grep -q done out.txt"}],
            }
        )
        solutions.append(
            {"id": f"relay-{n}", "turns": [{"calls": [{"tool": "bash", "arguments": {"command": command}}]}]}
        )
    tasks.append({**tasks[0], "id": "idle"})
    solutions.append(
        {"id": "idle", "turns": [{"calls": [{"tool": "bash", "arguments": {"command": "true"}}]}]}
    )
    lines = "".join(json.dumps(solution) + "\n" for solution in solutions)
    return make_bundle(
        root, toml=TOML, envs={}, tasks={"train": tasks}, files={"solutions/train.jsonl": lines}
    )


def replay(bundle: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_env.cli", "replay", str(bundle), *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_replay_plays_tasks_at_once_lists_them_in_task_order_with_each_ones_time_and_exits_1_for_a_wrong_one(
    tmp_path: Path,
):
    shared = tmp_path / "shared"
    shared.mkdir()
    bundle = relay_bundle(tmp_path / "relay", shared)

    done = replay(bundle, "--concurrency", str(AT_ONCE))

    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "split", "index", "id", "toolset", "calls", "score", "expected", "seconds", "result"
    ]  # fmt: skip
    rows = [line.split() for line in lines[2:7]]
    assert [(row[2], row[5], row[8]) for row in rows] == [
        ("relay-0", "1.00", "ok"),
        ("relay-1", "1.00", "ok"),
        ("relay-2", "1.00", "ok"),
        ("relay-3", "1.00", "ok"),
        ("idle", "0.00", "WRONG"),
    ]
    seconds = [float(row[7]) for row in rows]
    assert seconds[0] >= 0.05 and min(seconds) >= 0  # relay-0 waited for the three others to end
    assert "5 tasks played in " in done.stdout and f" s, up to {AT_ONCE} at once" in done.stdout
    assert done.stdout.rstrip().endswith("4 of 5 tasks scored as their reference play expects")
    assert sorted(path.name for path in shared.iterdir()) == sorted(
        [f"started-{n}" for n in range(AT_ONCE)] + [f"ended-{n}" for n in range(AT_ONCE)]
    )


def test_replay_refuses_a_concurrency_below_1_saying_what_it_takes(tmp_path: Path):
    done = replay(tmp_path, "--concurrency", "0")

    assert done.returncode == 2
    assert "--concurrency: must be a whole number, 1 or more, got '0'" in done.stderr


def test_check_refuses_a_build_concurrency_below_1_from_its_option_or_its_variable_saying_what_to_give(
    tmp_path: Path,
):
    from tst.support.harbor_tasks import DATASET

    command = [sys.executable, "-m", "agent_env.cli", "check", str(DATASET)]
    option = subprocess.run(
        [*command, "--build-concurrency", "0"], capture_output=True, text=True, timeout=60
    )
    variable = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AGENTENV_BUILD_CONCURRENCY": "several"},
    )

    assert option.returncode == variable.returncode == 2
    assert "--build-concurrency: must be a whole number, 1 or more, got '0'" in option.stderr
    assert variable.stderr.startswith(
        "error: AGENTENV_BUILD_CONCURRENCY must be a positive integer, got 'several': set it to, say, "
    )
