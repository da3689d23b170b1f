"""Tracked teardown: what waits for an episode's teardown, and what a vanished client leaves behind.

The session's next reset, its close and the server's shutdown all wait for a teardown in flight;
a client that disconnects, mid-call or idle, or whose process is killed, has its episode torn down
with nothing left running: no sandbox folder, no process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect as connect_ws

from agent_env._episode import EpisodeState
from agent_env.openenv import AgentEnvAction, AgentEnvEnvironment, build_app, build_served_app
from agent_env.openenv._episode_session import EpisodeSession
from agent_env.sandbox import LocalSandboxProvider
from agent_env.testing import FakeTask, Gate, fake_served
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate
from tst.support.waiting import alive, until
from tst.support.wharf import BASH_TASK, SLEEPER, WHARF, sandbox_folders, sleeper_pids

pytestmark = pytest.mark.needs("openenv_installed")

WAIT_S = 10.0
STILL_HELD_S = 0.3
"""How long a test watches something it expects to stay blocked while a teardown is held."""


def status(url: str, name: str) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(f"{url}/{name}/status", timeout=10).json()
    return answer


def end_with_missed_deadline(client: Any) -> None:
    answer = client.step(
        AgentEnvAction.call_tool("add_crate", {"crate": "C1", "bay": 2}, timeout_s=0.2).wire()
    )
    assert answer.observation["error"]["code"] == "DEADLINE_EXCEEDED"


def sleeper_pid(parent: Path) -> int:
    """The pid the one `SLEEPER` command under `parent` wrote, once it has written it."""
    assert until(lambda: sleeper_pids(parent) != [], WAIT_S)
    [pid] = sleeper_pids(parent)
    return pid


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def test_the_next_reset_waits_for_the_previous_episodes_teardown(serve: Serve, connect: Connect) -> None:
    crane, teardown = Gate(), Gate()
    task = FakeTask("held", tools=[add_crate], tool_gates={"add_crate": crane}, teardown_gate=teardown)
    client = connect(serve({"train": [task]}).url, message_timeout_s=WAIT_S)
    client.reset(split="train", index=0)
    end_with_missed_deadline(client)
    answers: list[Any] = []
    resetting = threading.Thread(target=lambda: answers.append(client.reset(split="train", index=0)))

    resetting.start()
    resetting.join(STILL_HELD_S)
    waited = resetting.is_alive() and len(task.episodes) == 1
    teardown.release()
    resetting.join(WAIT_S)

    assert waited
    assert task.episodes[0].state is EpisodeState.TORN_DOWN
    assert answers[0].observation["error"] is None and answers[0].observation["turn"] == 1
    assert len(task.episodes) == 2


def test_a_sessions_close_waits_for_its_episodes_teardown(serve: Serve, connect: Connect) -> None:
    teardown = Gate()
    task = FakeTask("closing", tools=[add_crate], teardown_gate=teardown)
    server = serve({"train": [task]}, name="dock")
    client = connect(server.url, message_timeout_s=WAIT_S)
    client.reset(split="train", index=0)

    client.close()
    assert teardown.wait_reached()
    time.sleep(STILL_HELD_S)
    held = status(server.url, "dock")
    teardown.release()

    assert held["connections"] == 1 and held["live_episodes"] == 1 and held["tearing_down"] == 1
    assert until(lambda: status(server.url, "dock")["connections"] == 0, WAIT_S)
    assert task.episodes[0].state is EpisodeState.TORN_DOWN
    assert status(server.url, "dock")["live_episodes"] == 0


def test_shutdown_waits_for_every_teardown_and_tears_down_every_live_episode(
    serve: Serve, connect: Connect
) -> None:
    teardown = Gate()
    held = FakeTask("held", tools=[add_crate], tool_gates={"add_crate": Gate()}, teardown_gate=teardown)
    live = FakeTask("live", tools=[add_crate])
    server = serve({"train": [held, live]})
    ended, playing = (
        connect(server.url, message_timeout_s=WAIT_S),
        connect(server.url, message_timeout_s=WAIT_S),
    )
    ended.reset(split="train", index=0)
    end_with_missed_deadline(ended)
    playing.reset(split="train", index=1)
    stopping = threading.Thread(target=server.stop)

    stopping.start()
    stopping.join(STILL_HELD_S)
    waited = stopping.is_alive()
    teardown.release()
    stopping.join(WAIT_S)

    assert waited
    assert not stopping.is_alive() and not server.running
    assert held.episodes[0].state is EpisodeState.TORN_DOWN
    assert live.episodes[0].state is EpisodeState.TORN_DOWN


def test_a_stopped_server_has_shut_its_episodes_down_and_starts_no_new_one(serve: Serve) -> None:
    task = FakeTask("late", tools=[add_crate])
    app = build_served_app(fake_served({"train": [task]}))
    serve(app).stop()

    answer = asyncio.run(EpisodeSession(app.state.agent_env).reset({"split": "train", "index": 0}))

    assert answer.error is not None and answer.error.code == "SHUTTING_DOWN"
    assert task.episodes == []


def test_openenv_s_only_app_events_are_its_idle_session_reaper_which_this_server_never_needs() -> None:
    app = build_served_app(fake_served({"train": [FakeTask("crates")]}))

    startup, shutdown = app.router.on_startup, app.router.on_shutdown

    assert [handler.__name__ for handler in startup] == ["_start_session_reaper"]
    assert [handler.__name__ for handler in shutdown] == ["_stop_session_reaper"]
    assert app.state.openenv_server.concurrency_config.session_timeout is None  # nothing to reap
    assert not getattr(AgentEnvEnvironment, "REQUIRES_SINGLE_THREAD_EXECUTOR", False)  # nor to shut


def test_a_client_that_disconnects_mid_call_has_its_episode_torn_down_with_nothing_left_running(
    serve: Serve, tmp_path: Path
) -> None:
    server = serve(build_app(WHARF, sandbox=LocalSandboxProvider(tmp_path)))
    with connect_ws(ws_url(server.url)) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"split": "train", "index": BASH_TASK}}))
        assert json.loads(ws.recv(WAIT_S))["data"]["observation"]["error"] is None
        ws.send(
            json.dumps(
                {"type": "step", "data": AgentEnvAction.call_tool("bash", {"command": SLEEPER}).wire()}
            )
        )
        pid = sleeper_pid(tmp_path)

    assert until(lambda: sandbox_folders(tmp_path) == [], WAIT_S)
    assert until(lambda: not alive(pid), WAIT_S)
    assert until(lambda: status(server.url, "wharf")["live_episodes"] == 0, WAIT_S)


def test_a_client_that_disconnects_between_calls_has_its_episode_and_sandbox_torn_down(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    server = serve(build_app(WHARF, sandbox=LocalSandboxProvider(tmp_path)))
    client = connect(server.url, message_timeout_s=WAIT_S)
    client.reset(split="train", index=BASH_TASK)
    client.step(AgentEnvAction.call_tool("bash", {"command": "echo started > note"}).wire())
    assert len(sandbox_folders(tmp_path)) == 1

    client.close()

    assert until(lambda: sandbox_folders(tmp_path) == [], WAIT_S)
    assert until(lambda: status(server.url, "wharf")["live_episodes"] == 0, WAIT_S)


KILLED_CLIENT = """
import json, sys
from websockets.sync.client import connect
ws = connect(sys.argv[1])
ws.send(json.dumps({"type": "reset", "data": {"split": "train", "index": int(sys.argv[2])}}))
assert json.loads(ws.recv())["data"]["observation"]["error"] is None
ws.send(json.dumps({"type": "step", "data": {"kind": "call_tool", "tool": "bash",
                                            "arguments": {"command": sys.argv[3]}}}))
print("calling", flush=True)
ws.recv()
"""


def test_a_client_process_killed_mid_call_has_its_episode_torn_down_with_nothing_left_running(
    serve: Serve, tmp_path: Path
) -> None:
    sandboxes = tmp_path / "sandboxes"
    sandboxes.mkdir()
    server = serve(build_app(WHARF, sandbox=LocalSandboxProvider(sandboxes)))
    trainer = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, ws_url(server.url), str(BASH_TASK), SLEEPER],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert trainer.stdout is not None and trainer.stdout.readline() == "calling\n"
        pid = sleeper_pid(sandboxes)

        os.killpg(trainer.pid, signal.SIGKILL)
        trainer.wait(WAIT_S)

        assert until(lambda: sandbox_folders(sandboxes) == [], WAIT_S)
        assert until(lambda: not alive(pid), WAIT_S)
        assert until(lambda: status(server.url, "wharf")["live_episodes"] == 0, WAIT_S)
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()


def test_an_episode_that_scored_is_torn_down_at_once_without_waiting_for_the_next_reset(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    server = serve(build_app(WHARF, sandbox=LocalSandboxProvider(tmp_path)))
    client = connect(server.url, message_timeout_s=WAIT_S)
    client.reset(split="train", index=BASH_TASK)
    assert len(sandbox_folders(tmp_path)) == 1

    scored = client.step(AgentEnvAction.end_turn("").wire())

    assert scored.done is True and scored.reward == 0.0
    assert until(lambda: sandbox_folders(tmp_path) == [], WAIT_S)
    assert client.state()["phase"] == "ended"
