"""Folders of Harbor tasks checked, replayed, served and evaluated through the existing machinery,
with Docker sandboxes built from their Dockerfiles (FROM the local sandbox image: nothing pulled)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_env import load_bundle, read_trajectories
from agent_env.cli import main
from agent_env.openenv import AgentEnvAction, BackgroundServer, build_app
from agent_env.sandbox._docker_build import task_image
from tst.integration._containers import sandbox_containers
from tst.support.harbor_tasks import DATASET, EDGE, MALFORMED
from tst.support.waiting import until

CLIENT_TIMEOUT_S = 60.0
TASKS = {"greeting": 0, "lines": 1, "marker": 2}


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trajectories")


@pytest.fixture(scope="module")
def server(record: Path) -> Iterator[BackgroundServer]:
    served = BackgroundServer(build_app(DATASET, record=record)).start()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def edge() -> Iterator[BackgroundServer]:
    served = BackgroundServer(build_app(EDGE)).start()
    yield served
    served.stop()


def status(server: BackgroundServer, name: str) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(f"{server.url}/{name}/status", timeout=10).json()
    return answer


def bash(client: Any, command: str) -> Any:
    return client.step(AgentEnvAction.call_tool("bash", {"command": command}).wire())


def test_agent_env_check_lists_the_dataset_and_replay_scores_every_solution_as_its_tests_say(capsys):
    checked = main(["check", str(DATASET)])
    check_out = capsys.readouterr().out
    replayed = main(["replay", str(DATASET)])
    replay_out = capsys.readouterr().out

    assert (checked, replayed) == (0, 0)
    assert check_out == "dataset: ok: 0 envs, 1 agents, tasks: train 3\n"
    rows = [line.split() for line in replay_out.splitlines()[2:5]]
    assert [(row[2], row[5], row[8]) for row in rows] == [
        ("greeting", "1.00", "ok"),
        ("lines", "1.00", "ok"),
        ("marker", "1.00", "ok"),
    ]
    assert "3 of 3 tasks scored as their reference play expects" in replay_out


def test_a_tasks_image_is_built_once_per_build_context_and_the_next_load_builds_nothing(
    tmp_path: Path, docker_client: Any
):
    task = shutil.copytree(DATASET / "lines", tmp_path / "lines")
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"# {uuid.uuid4().hex}\n")
    try:
        first = task_image(docker_client, task / "environment", None, 60)
        second = task_image(docker_client, task / "environment", None, 60)
        bundle = load_bundle(task)

        assert (first.built, second.built) == (True, False)
        assert first.tag == second.tag and first.workdir == "/data"
        assert bundle.tasks("train")[0].sandbox_settings.image == first.tag
    finally:
        docker_client.images.remove(first.tag, force=True)


def test_a_dockerfile_that_fails_to_build_is_refused_at_load_with_its_build_logs_tail():
    with pytest.raises(Exception) as refused:
        load_bundle(MALFORMED / "bad-build")

    message = str(refused.value)
    assert "environment/: environment/Dockerfile's build failed; its log ends:" in message
    assert "COPY failed: file not found in build context" in message
    assert "fix the Dockerfile" in message


@pytest.mark.parametrize("task_id", list(TASKS))
def test_every_tasks_reference_play_served_over_the_websocket_scores_what_its_tests_say(
    server: BackgroundServer, connect: Any, task_id: str
):
    script = load_bundle(DATASET).solutions["train"][task_id]
    client = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)

    started = client.reset(split="train", index=TASKS[task_id], timeout_s=CLIENT_TIMEOUT_S)
    [call] = script.turns[0].calls
    answered = client.step(AgentEnvAction.call_tool(call.tool, call.arguments).wire())
    scored = client.step(AgentEnvAction.end_turn("done").wire())

    assert started.observation["task_id"] == task_id and started.observation["error"] is None
    assert answered.observation["error"] is None, answered.observation
    assert (scored.done, scored.reward) == (True, 1.0)


def test_neither_tests_nor_solution_is_in_the_models_container_and_a_play_that_does_nothing_scores_0(
    server: BackgroundServer, connect: Any
):
    client = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)

    client.reset(split="train", index=TASKS["greeting"], timeout_s=CLIENT_TIMEOUT_S)
    looked = bash(
        client,
        "pwd; ls -d /tests /solution /logs/verifier 2>&1; "
        r"find / -path /proc -prune -o -path /sys -prune -o \( -name solve.sh -o -name test.sh \) -print",
    )
    scored = client.step(AgentEnvAction.end_turn("I did nothing").wire())

    lines = looked.observation["result"].splitlines()
    assert lines[0] == "/app"
    assert [line for line in lines if line.startswith("ls:")] == [
        "ls: /tests: No such file or directory",
        "ls: /solution: No such file or directory",
        "ls: /logs/verifier: No such file or directory",
    ]
    assert not any("solve.sh" in line or "test.sh" in line for line in lines)
    assert lines[-1] == "[exit code: 0]"
    assert (scored.done, scored.reward) == (True, 0.0)


def test_reward_json_s_named_rewards_are_recorded_as_the_verifiers_components_in_the_trajectory(
    server: BackgroundServer, connect: Any, record: Path
):
    client = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)

    client.reset(split="train", index=TASKS["lines"], timeout_s=CLIENT_TIMEOUT_S)
    bash(client, "echo ' 4 ' > /data/count.txt")
    scored = client.step(AgentEnvAction.end_turn("four").wire())

    assert (scored.done, scored.reward) == (True, 1.0)
    assert until(lambda: any(t.turns and t.turns[0].reply == "four" for t in read_trajectories(record)), 30)
    [played] = [t for t in read_trajectories(record) if t.turns and t.turns[0].reply == "four"]
    [verifier] = played.verifiers
    assert (verifier.type, verifier.score) == ("test_script", 1.0)
    assert verifier.components == {"reward": 1.0, "correct": 1.0, "bare_number": 0.0}


def test_the_agents_time_limit_cuts_a_command_short_and_the_episode_is_scored_as_it_stood(
    edge: BackgroundServer, connect: Any
):
    client = connect(edge.url, message_timeout_s=CLIENT_TIMEOUT_S)

    client.reset(split="train", index=0, timeout_s=CLIENT_TIMEOUT_S)
    bash(client, "echo started > /work/state")
    started = time.monotonic()
    cut = bash(client, "sleep 600")
    seconds = time.monotonic() - started
    later = bash(client, "true")

    assert seconds < 15
    assert cut.observation["error"] is None
    assert "the task's time limit of 2 s ran out: the episode is over" in cut.observation["result"]
    assert (cut.done, cut.reward) == (True, 0.25)
    assert later.observation["error"]["code"] == "NO_OPEN_TURN"


def test_a_test_sh_past_its_timeout_leaves_the_episode_unscorable_not_0(edge: BackgroundServer, connect: Any):
    client = connect(edge.url, message_timeout_s=CLIENT_TIMEOUT_S)

    client.reset(split="train", index=1, timeout_s=CLIENT_TIMEOUT_S)
    started = time.monotonic()
    scored = client.step(AgentEnvAction.end_turn("").wire())

    assert time.monotonic() - started < 20
    assert scored.done and scored.reward is None
    error = scored.observation["error"]
    assert error["code"] == "VERIFIER_FAILED"
    assert "tests/test.sh ran past its [verifier] timeout_sec of 1 s" in error["message"]


def test_a_warm_pool_keeps_containers_of_each_tasks_image_and_hands_each_task_its_own(
    connect: Any, docker_client: Any
):
    served = BackgroundServer(build_app(DATASET, warm=1)).start()
    try:
        assert until(lambda: status(served, "dataset")["warm_pool"]["ready"] == 3, CLIENT_TIMEOUT_S)
        images = sorted(
            c.image.tags[0] for c in docker_client.containers.list() if c.name.startswith("agent-env-")
        )
        client = connect(served.url, message_timeout_s=CLIENT_TIMEOUT_S)
        looked = []
        for index in TASKS.values():
            client.reset(split="train", index=index, timeout_s=CLIENT_TIMEOUT_S)
            looked.append(bash(client, "pwd").observation["result"].splitlines()[0])
        pool = status(served, "dataset")["warm_pool"]

        assert len(set(images)) == 3 and "agent-env-sandbox:latest" in images
        assert looked == ["/app", "/data", "/work"]
        assert (pool["size"], pool["handed_out"], pool["started_cold"]) == (3, 3, 0)
    finally:
        served.stop()
    assert until(lambda: sandbox_containers(docker_client) == [], CLIENT_TIMEOUT_S)


def test_a_task_that_asks_for_the_internet_runs_without_it_on_a_server_not_started_allowing_it(
    tmp_path: Path, connect: Any
):
    task = shutil.copytree(DATASET / "marker", tmp_path / "online")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("allow_internet = false", "allow_internet = true"))
    served = BackgroundServer(build_app(task)).start()
    try:
        client = connect(served.url, message_timeout_s=CLIENT_TIMEOUT_S)
        client.reset(split="train", index=0, timeout_s=CLIENT_TIMEOUT_S)
        interfaces = bash(client, "ls /sys/class/net").observation["result"].split()
    finally:
        served.stop()

    assert load_bundle(task).tasks("train")[0].sandbox_settings.network is True
    assert interfaces[0] == "lo" and interfaces[1:] == ["[exit", "code:", "0]"]


@pytest.mark.needs("eval_installed")
def test_agent_env_eval_plays_the_dataset_with_a_scripted_model_each_sample_scored_by_its_test_sh(
    serve: Any, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
):
    from tst.support.chat_stand_in import API_KEY, MODEL, ChatStandIn

    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    plays = {"greeting": ["solve", "text"], "lines": ["text", "text"], "marker": ["solve", "solve"]}
    url = f"{serve(ChatStandIn(load_bundle(DATASET), 'train', plays).app).url}/v1"

    endpoint = ["--model-url", url, "--model", MODEL, "--api-key-env", "STAND_IN_KEY"]
    code = main(["eval", str(DATASET), "--split", "train", "-n", "2", *endpoint, "--out", str(tmp_path)])

    out, err = capsys.readouterr()
    assert code == 0
    assert "eval: 6/6 episodes, mean score 0.50, 0 errors" in err
    table = [line.split() for line in out.split("\n\n")[0].splitlines()[2:5]]
    assert {row[1]: row[2:4] for row in table} == {
        "greeting": ["2", "0.50"],
        "lines": ["2", "0.00"],
        "marker": ["2", "1.00"],
    }
    assert all(float(row[-1]) > 0 for row in table)  # each task's mean seconds
    recorded = list(read_trajectories(tmp_path))
    assert sorted(t.score for t in recorded) == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    first, second, *_ = sorted((t.started_at or 0.0, t.ended_at or 0.0) for t in recorded)
    assert second[0] < first[1]  # played at once: the second began before the first ended


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ((), "; 1 tasks ask for the internet and run without it (--allow-internet gives it)"),
        (("--allow-internet",), "; 1 tasks ask for the internet and get it (--allow-internet)"),
    ],
)
def test_agent_env_serve_says_at_start_whether_the_tasks_that_ask_for_the_internet_get_it(
    tmp_path: Path, options: tuple[str, ...], said: str
):
    task = shutil.copytree(DATASET / "marker", tmp_path / "online")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("allow_internet = false", "allow_internet = true"))
    agent_env = Path(sys.executable).parent / "agent-env"
    server = subprocess.Popen(
        [str(agent_env), "serve", str(task), "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(CLIENT_TIMEOUT_S)

    assert first.startswith("agent-env: serving online (train 1 tasks) on http://127.0.0.1:")
    assert first.rstrip("\n").endswith(said)


@pytest.mark.needs("trl_installed")
def test_env_demonstrations_are_each_tasks_solve_sh_played_on_the_server_as_sft_rows():
    from agent_env.training.trl import AgentEnv

    env = AgentEnv.local(DATASET)
    try:
        rows = env.demonstrations("train")
    finally:
        env.close()

    assert rows["id"] == ["greeting", "lines", "marker"]
    messages = rows[0]["messages"]
    assert messages[0] == {
        "role": "user",
        "content": "Write the word hello into the file /app/greeting.txt.\n",
    }
    command = messages[1]["tool_calls"][0]["function"]["arguments"]["command"]
    assert "echo hello > /app/greeting.txt" in command and command.endswith(
        "cd /app && bash /solution/solve.sh"
    )
    assert messages[2] == {"role": "tool", "name": "bash", "content": "[exit code: 0]"}


TIME_LIMIT_S = 8.0


@pytest.mark.needs("eval_installed")
def test_eval_scores_a_sample_whose_command_ran_into_the_time_limit_as_the_episode_stood(
    serve: Any, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
):
    from tst.support.chat_stand_in import API_KEY, MODEL, ChatStandIn

    task = shutil.copytree(EDGE / "agent-timeout", tmp_path / "tasks" / "agent-timeout")
    # Long enough for the command to write its state on a loaded machine before the limit cuts it.
    config = task / "task.toml"
    config.write_text(config.read_text().replace("timeout_sec = 2.0", f"timeout_sec = {TIME_LIMIT_S}"))
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho started > /work/state\nsleep 600\n")
    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    stand_in = ChatStandIn(load_bundle(tmp_path / "tasks"), "train", {"agent-timeout": ["solve"]})
    endpoint = [
        "--model-url",
        f"{serve(stand_in.app).url}/v1",
        "--model",
        MODEL,
        "--api-key-env",
        "STAND_IN_KEY",
    ]

    code = main(
        ["eval", str(tmp_path / "tasks"), "--split", "train", *endpoint, "--out", str(tmp_path / "out")]
    )

    _, err = capsys.readouterr()
    assert code == 0
    assert "eval: 1/1 episodes, mean score 0.25, 0 errors" in err
    [played] = read_trajectories(tmp_path / "out")
    assert (played.outcome.kind, played.score) == ("scored", 0.25)
    assert f"the task's time limit of {TIME_LIMIT_S:g} s ran out" in (played.turns[0].calls[0].result or "")
