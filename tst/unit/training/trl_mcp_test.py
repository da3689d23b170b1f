"""A bundle whose env is a real MCP server, served by a real OpenEnv server on loopback and driven
through AgentEnv as TRL drives it: the factory learns the server's tools by playing one task (the
Task API cannot list them), every rollout talks to its own server (stdio) or its own session (HTTP),
and a server that crashes costs its rollout the reward, with the reason in the tool's error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_env import read_trajectories
from agent_env.openenv import build_app
from agent_env.training.trl import AgentEnv, ToolCallError
from tst.support.mcp_bundles import http_notes_server, http_server, notes_bundle, stdio_server
from tst.support.serving import Serve
from tst.support.waiting import alive, until
from tst.unit.training._trl import Open, trl_tools

pytestmark = pytest.mark.needs("trl_installed")


def row(env: AgentEnv, index: int = 0) -> dict[str, Any]:
    return dict(env.dataset[index])


def test_a_stdio_server_s_tools_are_learned_by_playing_one_task_and_each_rollout_gets_its_own_server(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    server = serve(build_app(notes_bundle(tmp_path / "notes", stdio_server())))
    env = open_env(server.url)

    listed = httpx.post(f"{server.url}/notes/task", json={"split": "train", "index": 0}, timeout=10)
    assert listed.json()["task"]["toolset"]["tools"] is None  # the Task API cannot list them
    first, second = env.factory(), env.factory()
    first.reset(**row(env))
    second.reset(**row(env))

    assert sorted(trl_tools(first)) == [
        "add_note", "big", "crash", "end_turn", "fail", "hang", "list_notes", "orphan_and_hang", "session",
        "start_helper", "where",
    ]  # fmt: skip
    assert "Add a note." in (type(first).add_note.__doc__ or "")
    assert first.add_note(text="milk") == "noted: milk"
    assert second.list_notes() == "[]"
    assert json.loads(first.where())["pid"] != json.loads(second.where())["pid"]
    assert first.get_reward() == 1.0
    assert second.get_reward() == 0.0


def test_a_url_server_is_trained_on_through_the_factory_with_a_session_per_rollout(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    with http_notes_server() as notes:
        server = serve(build_app(notes_bundle(tmp_path, http_server(notes.url))))
        env = open_env(server.url)
        environment = env.factory()
        environment.reset(**row(env))

        assert environment.add_note(text="milk") == "noted: milk"
        assert environment.get_reward() == 1.0


def test_a_server_that_crashes_mid_rollout_costs_it_the_reward_and_its_tool_error_names_the_server(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    server = serve(build_app(notes_bundle(tmp_path, stdio_server())))
    env = open_env(server.url)
    environment = env.factory()
    environment.reset(**row(env))
    pid = json.loads(environment.where())["pid"]

    with pytest.raises(ToolCallError) as crashed:
        environment.crash()

    assert "MCP server 'notes'" in str(crashed.value)
    assert "exited with code 3" in str(crashed.value)
    assert environment.get_reward() is None
    assert until(lambda: not alive(pid))
    environment.reset(**row(env))  # the next rollout starts a server of its own
    assert environment.add_note(text="milk") == "noted: milk"
    assert environment.get_reward() == 1.0


def test_the_factory_s_probe_episode_is_recorded_labelled_as_the_probe_it_is(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    server = serve(build_app(notes_bundle(tmp_path / "notes", stdio_server()), record=runs))
    env = open_env(server.url, label="run-7")
    rollout = env.factory()
    rollout.reset(**row(env))
    rollout.add_note(text="milk")
    rollout.end_turn()
    assert rollout.get_reward() == 1.0  # as a trainer does: the score is in before the close
    env.close()

    assert until(lambda: len(list(read_trajectories(runs))) == 2)

    by_client = {t.client: t.outcome.kind for t in read_trajectories(runs)}
    assert by_client == {
        "agent_env: the factory's probe, listing the tools of toolset notes": "abandoned",
        "run-7": "scored",
    }
