"""The example bundle served over OpenEnv with Docker sandboxes, played over the WebSocket by a trainer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agent_env._loading import load_bundle
from agent_env._replay import load_solutions
from agent_env.openenv import AgentEnvAction, BackgroundServer, build_app
from tst.integration._containers import sandbox_containers
from tst.support.waiting import until
from tst.support.wharf import BASH_TASK, WHARF, play_reference

CLIENT_TIMEOUT_S = 30.0
KILLED_TEARDOWN_S = 30.0
"""The issue's bound: a killed trainer's containers are removed within 30 s."""

BUNDLE = load_bundle(WHARF)
PLAYS = [
    (split, task.index, task.id, load_solutions(BUNDLE, split)[task.id])
    for split in BUNDLE.splits
    for task in BUNDLE.tasks(split)
]

KILLED_CLIENT = """
import json, sys
from websockets.sync.client import connect
ws = connect(sys.argv[1])
ws.send(json.dumps({"type": "reset", "data": {"split": "train", "index": int(sys.argv[2])}}))
assert json.loads(ws.recv())["data"]["observation"]["error"] is None
ws.send(json.dumps({"type": "step", "data": {"kind": "call_tool", "tool": "bash",
                                            "arguments": {"command": "sleep 60"}}}))
print("calling", flush=True)
ws.recv()
"""


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    served = BackgroundServer(build_app(WHARF, sandbox="docker")).start()
    yield served
    served.stop()


def live_episodes(server: BackgroundServer) -> int:
    answer: dict[str, Any] = httpx.get(f"{server.url}/wharf/status", timeout=10).json()
    return int(answer["live_episodes"])


@pytest.mark.parametrize(
    ("split", "index", "task_id", "script"), PLAYS, ids=[f"{p[0]}-{p[2]}" for p in PLAYS]
)
def test_every_example_task_played_from_its_reference_play_with_docker_sandboxes_scores_as_expected(
    server: BackgroundServer, connect: Any, split: str, index: int, task_id: str, script: Any
) -> None:
    client = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)

    started = client.reset(split=split, index=index, timeout_s=CLIENT_TIMEOUT_S)
    answers = []
    for turn in script.turns:
        answers += [client.step(AgentEnvAction.call_tool(c.tool, c.arguments).wire()) for c in turn.all_calls]
        answers.append(client.step(AgentEnvAction.end_turn(turn.reply).wire()))

    assert started.observation["task_id"] == task_id and started.observation["error"] is None
    assert [a.observation["error"] for a in answers] == [None] * len(answers)
    assert (answers[-1].done, answers[-1].reward) == (True, script.expected_score)
    assert until(lambda: live_episodes(server) == 0, CLIENT_TIMEOUT_S)


def test_a_bash_task_runs_its_commands_in_a_container_of_its_own_that_is_removed_once_it_scored(
    server: BackgroundServer, connect: Any, docker_client: Any
) -> None:
    client = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)

    client.reset(split="train", index=BASH_TASK, timeout_s=CLIENT_TIMEOUT_S)
    host = client.step(AgentEnvAction.call_tool("bash", {"command": "hostname; ls"}).wire())
    containers = sandbox_containers(docker_client)
    *_, scored = play_reference(client, "manifest-total-000")

    assert [c[:12] for c in containers] == [host.observation["result"].split()[0]]
    assert host.observation["result"].split()[1:] == ["manifest.csv", "[exit", "code:", "0]"]
    assert (scored.done, scored.reward) == (True, 1.0)
    assert until(lambda: sandbox_containers(docker_client) == [], CLIENT_TIMEOUT_S)


def test_a_trainer_process_killed_mid_episode_has_its_container_removed_within_30_s(
    server: BackgroundServer, docker_client: Any
) -> None:
    url = server.url.replace("http://", "ws://") + "/ws"
    trainer = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, url, str(BASH_TASK)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert trainer.stdout is not None and trainer.stdout.readline() == "calling\n"
        assert until(lambda: len(sandbox_containers(docker_client)) == 1, CLIENT_TIMEOUT_S)

        os.killpg(trainer.pid, signal.SIGKILL)
        trainer.wait(CLIENT_TIMEOUT_S)

        assert until(lambda: sandbox_containers(docker_client) == [], KILLED_TEARDOWN_S)
        assert until(lambda: live_episodes(server) == 0, KILLED_TEARDOWN_S)
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
