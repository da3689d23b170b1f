"""A trainer killed with SIGKILL mid-deploy, mid-tool-call or mid-verify: its episode is torn down,
at once in practice and within 30 s at worst, and the server plays on for everyone else.

Mid-deploy, the env's setup is held at its gate for good, so the teardown waits for it as long as it
waits for any step (`RELEASE_TIMEOUT_S`) and then gives up on it; the test shortens that wait.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from agent_env import _episode as episode_module
from agent_env._episode import EpisodeState
from agent_env.openenv import BackgroundServer, build_served_app
from agent_env.testing import Gate, fake_served
from tst.reliability._raw import Raw, dock, observation, play_on, status
from tst.support.waiting import until

TEARDOWN_S = 30.0
HELD_SETUP_GIVEN_UP_S = 2.0

TRAINER = """
import json, sys
from websockets.sync.client import connect
frames = json.loads(sys.argv[2])
with connect(sys.argv[1]) as ws:
    for frame in frames[:-1]:
        ws.send(json.dumps(frame))
        ws.recv()
    ws.send(json.dumps(frames[-1]))
    print("sent", flush=True)
    ws.recv()
"""

RESET = {"type": "reset", "data": {"split": "train", "index": 0}}
CALL = {
    "type": "step",
    "data": {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": "C1", "bay": 2}},
}
END = {"type": "step", "data": {"kind": "end_turn", "reply": "Stored."}}
PHASES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "mid-deploy": ("deploy_gate", [RESET]),
    "mid-tool-call": ("tool_gates", [RESET, CALL]),
    "mid-verify": ("verify_gate", [RESET, CALL, END]),
}


@pytest.fixture
def held() -> Iterator[Gate]:
    gate = Gate()
    yield gate
    gate.release()


@pytest.mark.parametrize("phase", list(PHASES))
def test_a_trainer_killed_mid_phase_has_its_episode_torn_down_and_the_server_plays_on(
    held: Gate, phase: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(episode_module, "RELEASE_TIMEOUT_S", HELD_SETUP_GIVEN_UP_S)
    field, frames = PHASES[phase]
    holding: dict[str, Any] = {field: {"add_crate": held} if field == "tool_gates" else held}
    tasks = [dock("held", **holding), dock("free")]
    server = BackgroundServer(build_served_app(fake_served({"train": tasks}))).start()
    trainer = subprocess.Popen(
        [sys.executable, "-c", TRAINER, server.url.replace("http://", "ws://") + "/ws", json.dumps(frames)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert trainer.stdout is not None and trainer.stdout.readline() == "sent\n"
        assert held.wait_reached(TEARDOWN_S), f"the episode never reached its {phase} gate"

        os.killpg(trainer.pid, signal.SIGKILL)
        trainer.wait(TEARDOWN_S)

        assert until(lambda: tasks[0].episodes[0].state is EpisodeState.TORN_DOWN, TEARDOWN_S)
        assert until(lambda: status(server)["live_episodes"] == 0 and status(server)["connections"] == 0)
        other = Raw(server.url)
        observation(other.ask("reset", {"split": "train", "index": 1}))
        scored = play_on(other)
        other.close()
        assert (scored["done"], scored["reward"]) == (True, 1.0)
        assert tasks[0].episodes[0].score is None
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
        held.release()
        server.stop()
