"""A mixed folder of Harbor tasks, some fine and some broken (no test.sh, a malformed task.toml, a
Dockerfile that fails to build), run with `--skip-broken-tasks` (`skip_broken_tasks=True`): the
good tasks play and score as their tests say, the broken are listed with their problems. And what
a Harbor dataset differs in elsewhere: a replayed task that asks for the internet gets a network
with `--allow-internet`, as a served one; reference plays are each task folder's solution/solve.sh."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_env import load_bundle
from agent_env.cli import main
from agent_env.openenv import AgentEnvAction
from agent_env.sandbox._docker_engine import SANDBOX_LABEL
from tst.support.harbor_tasks import DATASET, MALFORMED
from tst.support.metrics import scrape
from tst.support.waiting import until

CLIENT_TIMEOUT_S = 60.0
STARTUP_S = 180.0
"""A bound on the server's start: OpenEnv's import, and the images built, one of them failing."""
GOOD = ["greeting", "lines", "marker"]
BROKEN = ["bad-build", "bad-toml", "no-tests"]
SKIPPED = [
    "skipped 3 of 6 tasks:",
    "  bad-build/environment/: environment/Dockerfile's build failed; its log ends:",
    "  bad-toml/task.toml: malformed TOML: Expected ']' at the end of a table declaration",
    "  no-tests/tests/test.sh: missing: write the script that checks the work",
]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset's three good tasks beside three broken ones."""
    root = tmp_path_factory.mktemp("harbor") / "mixed"
    shutil.copytree(DATASET, root)
    for name in BROKEN:
        shutil.copytree(MALFORMED / name, root / name)
    return root


def summary_lines(text: str) -> list[str]:
    """The lines of the skip summary in `text`, each cut to what `SKIPPED` expects of it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(SKIPPED[0]))
    found = [lines[start].removeprefix("agent-env: "), *lines[start + 1 : start + len(SKIPPED)]]
    return [line[: len(expected)] for line, expected in zip(found, SKIPPED, strict=True)]


def test_serve_with_skip_broken_tasks_serves_the_good_tasks_of_a_mixed_folder_and_lists_the_broken(
    mixed: Path, tmp_path: Path, connect: Any
) -> None:
    output = tmp_path / "serve.txt"
    with output.open("wb") as out:
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "agent-env"),
                "serve",
                str(mixed),
                "--port",
                "0",
                "--skip-broken-tasks",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        assert until(
            lambda: "lists every problem" in output.read_text() or server.poll() is not None, STARTUP_S
        )
        text = output.read_text()
        [line] = [line for line in text.splitlines() if line.startswith("agent-env: serving")]
        url = line.split(" on ")[1].split(",")[0]
        client = connect(url, message_timeout_s=CLIENT_TIMEOUT_S)
        scores = {}
        for index, task_id in enumerate(GOOD):
            started = client.reset(split="train", index=index, timeout_s=CLIENT_TIMEOUT_S)
            [call] = load_bundle(DATASET).solutions["train"][task_id].turns[0].calls
            client.step(AgentEnvAction.call_tool(call.tool, call.arguments).wire())
            scored = client.step(AgentEnvAction.end_turn("done").wire())
            scores[started.observation["task_id"]] = scored.reward
        skipped = scrape(url)[("agent_env_tasks_skipped", ())]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(CLIENT_TIMEOUT_S)

    assert line.startswith("agent-env: serving mixed (train 3 tasks) on http://127.0.0.1:")
    assert line.endswith("; 3 of 6 tasks skipped: they do not load (listed below)")
    assert summary_lines(text) == SKIPPED
    assert scores == dict.fromkeys(GOOD, 1.0)
    assert skipped == 3


def test_replay_with_skip_broken_tasks_scores_every_good_task_of_a_mixed_folder_and_lists_the_broken(
    mixed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["replay", str(mixed), "--skip-broken-tasks"])

    out, err = capsys.readouterr()
    assert code == 0
    assert summary_lines(err) == SKIPPED
    assert out.rstrip().endswith("3 of 3 tasks scored as their reference play expects")


def test_every_command_without_skip_broken_tasks_is_stopped_by_the_mixed_folders_broken_tasks(
    mixed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["replay", str(mixed)])

    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"BundleError: 2 problems in {mixed}")  # no image is built for a load that fails
    assert "no-tests/tests/test.sh: missing" in err and "bad-toml/task.toml: malformed TOML" in err


@pytest.mark.parametrize(("options", "network"), [((), "none"), (("--allow-internet",), "bridge")])
def test_replay_with_allow_internet_gives_a_task_that_asks_for_the_internet_a_network_as_serve_does(
    tmp_path: Path,
    docker_client: Any,
    capsys: pytest.CaptureFixture[str],
    options: tuple[str, ...],
    network: str,
) -> None:
    task = shutil.copytree(DATASET / "marker", tmp_path / "online")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("allow_internet = false", "allow_internet = true"))
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntouch done\nsleep 3\n")
    modes: list[str] = []

    def seen() -> bool:
        for container in docker_client.containers.list(filters={"label": SANDBOX_LABEL}):
            modes.append(container.attrs["HostConfig"]["NetworkMode"])
        return bool(modes)

    codes: list[int] = []
    replaying = threading.Thread(target=lambda: codes.append(main(["replay", str(task), *options])))
    replaying.start()
    try:
        assert until(seen, CLIENT_TIMEOUT_S)
    finally:
        replaying.join(CLIENT_TIMEOUT_S)

    err = capsys.readouterr().err
    assert codes == [0]
    assert set(modes) == {network}
    said = "get it (--allow-internet)" if options else "run without it (--allow-internet gives it)"
    assert f"note: 1 tasks ask for the internet and {said}" in err


@pytest.mark.needs("trl_installed")
def test_agent_env_local_skipping_broken_tasks_serves_the_rest_and_a_failing_solve_sh_is_named_in_the_warning(
    mixed: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from agent_env.training.trl import AgentEnv, DemonstrationWarning

    dataset = shutil.copytree(mixed, tmp_path / "mixed")
    (dataset / "lines" / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    env = AgentEnv.local(dataset, skip_broken_tasks=True)
    try:
        with pytest.warns(DemonstrationWarning) as warned:
            rows = env.demonstrations("train")
    finally:
        env.close()

    assert rows["id"] == ["greeting", "marker"]
    [message] = [str(w.message) for w in warned if w.category is DemonstrationWarning]
    assert (
        "1 of 3 reference plays of split 'train' (their task folders' solution/solve.sh) no longer" in message
    )
    assert "fix each task or its solution/solve.sh" in message and "solutions/train.jsonl" not in message
    assert [
        record.getMessage().splitlines()[0] for record in caplog.records if "skipped" in record.getMessage()
    ] == ["skipped 3 of 6 tasks:"]


@pytest.mark.needs("trl_installed")
def test_demonstrations_of_harbor_tasks_without_a_solve_sh_say_to_add_one_not_a_solutions_file(
    tmp_path: Path,
) -> None:
    from agent_env.training.trl import AgentEnv, DemonstrationError

    task = shutil.copytree(DATASET / "marker", tmp_path / "tasks" / "marker")
    shutil.rmtree(task / "solution")
    env = AgentEnv.local(tmp_path / "tasks")
    try:
        with pytest.raises(DemonstrationError) as refused:
            env.demonstrations("train")
    finally:
        env.close()

    assert str(refused.value).startswith(
        f"split 'train' on {env.url} has no reference plays: add solution/solve.sh to its Harbor task "
        "folders, a script that does the task"
    )
    assert "solutions/" not in str(refused.value)


@pytest.mark.needs("eval_installed")
def test_eval_with_skip_broken_tasks_plays_the_good_tasks_of_the_only_split_a_harbor_dataset_has(
    mixed: Path, serve: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tst.support.chat_stand_in import API_KEY, MODEL, ChatStandIn

    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    plays = {"greeting": ["solve"], "lines": ["text"], "marker": ["solve"]}
    url = f"{serve(ChatStandIn(load_bundle(DATASET), 'train', plays).app).url}/v1"

    code = main(
        [
            "eval",
            str(mixed),
            "--model-url",
            url,
            "--model",
            MODEL,
            "--api-key-env",
            "STAND_IN_KEY",
            "--skip-broken-tasks",
        ]
    )

    out, err = capsys.readouterr()
    assert code == 0
    assert summary_lines(err) == SKIPPED
    assert f"eval: played split 'train', the only split {mixed} has" in err
    rows = {line.split()[1]: line.split()[3] for line in out.split("\n\n")[0].splitlines()[2:5]}
    assert rows == {"greeting": "1.00", "lines": "0.00", "marker": "1.00"}
