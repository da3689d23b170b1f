"""Capacity: how many sessions a server holds at once, where that number comes from, and what a
client past it sees (OpenEnv's own CAPACITY_REACHED refusal, with the sessions already open unharmed).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agent_env._episode import EpisodeState
from agent_env.openenv import (
    DEFAULT_MAX_CONCURRENT_ENVS,
    AgentEnvAction,
    BackgroundServer,
    build_app,
    build_served_app,
    resolve_max_concurrent_envs,
)
from agent_env.testing import FakeTask, calls, fake_served
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate
from tst.support.waiting import WAIT_S, until
from tst.support.wharf import WHARF
from tst.unit.openenv._leak import leak_a_session, with_a_session_leak

pytestmark = pytest.mark.needs("openenv_installed")

CLIENT_TIMEOUT_S = 10.0


def status(server: BackgroundServer, env_name: str = "tasks") -> dict[str, Any]:
    answer = httpx.get(f"{server.url}/{env_name}/status", timeout=10)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def connections_become(server: BackgroundServer, count: int, within: float = WAIT_S) -> bool:
    """Whether the server holds exactly `count` WebSocket connections within `within` seconds."""
    return until(lambda: status(server)["connections"] == count, within)


# Past capacity


def test_at_capacity_a_second_session_is_refused_with_capacity_reached_while_the_first_plays_on(
    serve: Serve, connect: Connect
) -> None:
    task = FakeTask("crates", tools=[add_crate])
    server = serve({"train": [task]}, max_concurrent_envs=1)
    first = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)
    first.reset(split="train", index=0)
    second = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)

    with pytest.raises(RuntimeError) as refused:
        second.reset(split="train", index=0)
    played = first.step(AgentEnvAction.call_tool("add_crate", {"crate": "C1", "bay": 2}).wire())

    assert str(refused.value) == (
        "Server error: Server at capacity: 1/1 sessions held (1 by WebSocket clients on /ws, 0 without a "
        "client). Cannot accept new connections. (code: CAPACITY_REACHED)"
    )
    assert played.observation["error"] is None
    assert played.observation["result"] == "stored dry crate C1 in bay 2"
    assert len(task.episodes) == 1 and calls(task.episodes[0]) == [("add_crate", {"crate": "C1", "bay": 2})]
    assert connections_become(server, 1)
    assert status(server)["live_episodes"] == 1


def test_at_capacity_with_a_session_held_without_a_client_the_refusal_says_how_many_of_each_kind(
    serve: Serve, connect: Connect
) -> None:
    task = FakeTask("crates", tools=[add_crate])
    server = serve(
        with_a_session_leak(build_served_app(fake_served({"train": [task]}), max_concurrent_envs=2))
    )
    leak_a_session(server)
    connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S).reset(split="train", index=0)

    with pytest.raises(RuntimeError) as refused:
        connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S).reset(split="train", index=0)

    assert str(refused.value) == (
        "Server error: Server at capacity: 2/2 sessions held (1 by WebSocket clients on /ws, 1 without a "
        "client). Cannot accept new connections. (code: CAPACITY_REACHED)"
    )
    assert status(server)["sessions"] == {"held": 2, "websocket": 1, "without_client": 1}
    assert len(task.episodes) == 1


def test_at_capacity_the_task_api_still_answers(serve: Serve, connect: Connect) -> None:
    task = FakeTask("crates", tools=[add_crate])
    server = serve({"train": [task]}, max_concurrent_envs=1)
    connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S).reset(split="train", index=0)

    splits = httpx.get(f"{server.url}/tasks/splits", timeout=10)
    spec = httpx.post(f"{server.url}/tasks/task", json={"split": "train", "index": 0}, timeout=10)

    assert splits.status_code == 200 and splits.json() == [{"name": "train", "type": "train"}]
    assert spec.status_code == 200 and spec.json()["task"]["id"] == "crates"
    assert len(task.episodes) == 1


def test_once_the_session_at_capacity_closes_a_new_session_is_accepted_and_plays(
    serve: Serve, connect: Connect
) -> None:
    task = FakeTask("crates", tools=[add_crate], score=1.0)
    server = serve({"train": [task]}, max_concurrent_envs=1)
    first = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)
    first.reset(split="train", index=0)
    with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
        connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S).reset(split="train", index=0)

    first.close()
    assert connections_become(server, 0)
    later = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)
    opened = later.reset(split="train", index=0)
    scored = later.step(AgentEnvAction.end_turn("done").wire())

    assert task.episodes[0].state is EpisodeState.TORN_DOWN
    assert opened.observation["error"] is None and opened.observation["task_id"] == "crates"
    assert (scored.done, scored.reward) == (True, 1.0)
    assert len(task.episodes) == 2


# Where the capacity comes from


def test_the_max_concurrent_envs_variable_sets_how_many_sessions_the_server_holds(
    serve: Serve, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAX_CONCURRENT_ENVS", "2")
    task = FakeTask("crates", tools=[add_crate])
    server = serve({"train": [task]})
    held = [connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S) for _ in range(2)]

    opened = [client.reset(split="train", index=0) for client in held]
    with pytest.raises(RuntimeError) as refused:
        connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S).reset(split="train", index=0)

    assert status(server)["max_concurrent_envs"] == 2
    assert [answer.observation["error"] for answer in opened] == [None, None]
    assert "Server at capacity: 2/2 sessions held (2 by WebSocket clients on /ws, 0 without" in str(
        refused.value
    )
    assert "CAPACITY_REACHED" in str(refused.value)


def test_the_max_concurrent_envs_argument_wins_over_the_variable(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAX_CONCURRENT_ENVS", "2")

    bundle = serve(build_app(WHARF, max_concurrent_envs=3))
    fake = serve({"train": [FakeTask("crates")]}, max_concurrent_envs=5)

    assert status(bundle, "wharf")["max_concurrent_envs"] == 3
    assert status(fake)["max_concurrent_envs"] == 5
    assert resolve_max_concurrent_envs(7) == 7


def test_a_bad_variable_is_not_read_when_the_argument_gives_the_capacity(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAX_CONCURRENT_ENVS", "lots")

    server = serve(build_app(WHARF, max_concurrent_envs=4))

    assert status(server, "wharf")["max_concurrent_envs"] == 4


@pytest.mark.parametrize("variable", [None, "", "   "])
def test_without_the_argument_or_a_variable_the_server_holds_64_sessions(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, variable: str | None
) -> None:
    if variable is None:
        monkeypatch.delenv("MAX_CONCURRENT_ENVS", raising=False)
    else:
        monkeypatch.setenv("MAX_CONCURRENT_ENVS", variable)

    server = serve(build_app(WHARF))

    assert DEFAULT_MAX_CONCURRENT_ENVS == 64
    assert status(server, "wharf")["max_concurrent_envs"] == 64
    assert resolve_max_concurrent_envs() == 64


def test_a_variable_with_spaces_around_its_number_is_read_as_that_number(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAX_CONCURRENT_ENVS", " 8 ")

    server = serve({"train": [FakeTask("crates")]})

    assert status(server)["max_concurrent_envs"] == 8


# Bad capacities


@pytest.mark.parametrize("variable", ["abc", "0", "-3", "2.5"])
def test_a_variable_that_is_not_a_positive_integer_is_refused_with_how_to_set_it(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv("MAX_CONCURRENT_ENVS", variable)

    with pytest.raises(ValueError) as refused:
        build_app(WHARF)

    assert str(refused.value) == (
        f"MAX_CONCURRENT_ENVS must be a positive integer, got {variable!r}: set it to, say, 64, "
        "or pass max_concurrent_envs="
    )


@pytest.mark.parametrize("argument", [0, -3, True, 2.5, "4"])
def test_an_argument_that_is_not_a_positive_integer_is_refused_saying_what_it_must_be(
    monkeypatch: pytest.MonkeyPatch, argument: Any
) -> None:
    monkeypatch.delenv("MAX_CONCURRENT_ENVS", raising=False)

    with pytest.raises(ValueError) as refused:
        build_app(WHARF, max_concurrent_envs=argument)

    assert str(refused.value) == f"max_concurrent_envs must be a positive integer, got {argument!r}"
