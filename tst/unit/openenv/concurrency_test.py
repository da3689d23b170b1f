"""Nothing blocks the server's event loop: a session busy in a sync tool or in bash holds only itself."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from agent_env.openenv import AgentEnvAction, build_app
from agent_env.sandbox import LocalSandboxProvider
from agent_env.testing import FakeTask
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate
from tst.support.wharf import BASH_TASK, SINGLE_TURN_TASK, WHARF, play_reference, sandbox_folders

pytestmark = pytest.mark.needs("openenv_installed")

WAIT_S = 10.0

crane_free = threading.Event()


def lift_crate(crate: str) -> str:
    """Lift a crate with the crane, which blocks its thread until the crane is free.

    Args:
        crate: The crate's label.
    """
    if not crane_free.wait(WAIT_S):
        raise TimeoutError("the crane stayed busy")
    return f"lifted {crate}"


def in_thread(call: Any) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(call()), daemon=True)
    thread.start()
    return thread, answers


def test_a_sync_tool_that_blocks_holds_only_its_own_session_while_another_plays_a_whole_episode(
    serve: Serve, connect: Connect
) -> None:
    crane_free.clear()
    busy_task = FakeTask("busy", tools=[lift_crate])
    other_task = FakeTask("other", tools=[add_crate], score=1.0)
    url = serve({"train": [busy_task, other_task]}).url
    busy, other = connect(url, message_timeout_s=WAIT_S), connect(url, message_timeout_s=WAIT_S)
    busy.reset(split="train", index=0)
    lifting, lifted = in_thread(
        lambda: busy.step(AgentEnvAction.call_tool("lift_crate", {"crate": "C1"}).wire())
    )

    other.reset(split="train", index=1)
    stored = other.step(AgentEnvAction.call_tool("add_crate", {"crate": "C2", "bay": 4}).wire())
    scored = other.step(AgentEnvAction.end_turn("stored").wire())
    still_lifting = lifting.is_alive()
    crane_free.set()
    lifting.join(WAIT_S)

    assert still_lifting
    assert stored.observation["result"] == "stored dry crate C2 in bay 4"
    assert (scored.done, scored.reward) == (True, 1.0)
    assert lifted[0].observation["result"] == "lifted C1"


def test_a_bash_command_that_runs_holds_only_its_own_session_while_another_plays_a_whole_episode(
    serve: Serve, connect: Connect, tmp_path: Path
) -> None:
    url = serve(build_app(WHARF, sandbox=LocalSandboxProvider(tmp_path))).url
    waiting, playing = connect(url, message_timeout_s=WAIT_S), connect(url, message_timeout_s=WAIT_S)
    waiting.reset(split="train", index=BASH_TASK)
    [folder] = sandbox_folders(tmp_path)
    gate = folder / "go"  # in the command's own folder: the only one bubblewrap lets it see change
    command = "until [ -e go ]; do sleep 0.01; done; echo went"
    running, ran = in_thread(
        lambda: waiting.step(AgentEnvAction.call_tool("bash", {"command": command}).wire())
    )

    playing.reset(split="train", index=SINGLE_TURN_TASK)
    *_, end = play_reference(playing, "store-crate-000")
    still_running = running.is_alive()
    gate.touch()
    running.join(WAIT_S)

    assert still_running
    assert (end.done, end.reward) == (True, 1.0)
    assert "went" in ran[0].observation["result"]
