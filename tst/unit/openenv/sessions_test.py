"""Sessions: each held by a client connected to `/ws` for as long as it stays, counted by kind in
`/status`, and never shared: a connection that names another's session is refused.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect as connect_websocket

from agent_env.openenv import BackgroundServer, build_served_app
from agent_env.openenv._sessions import ATTACH_REFUSED
from agent_env.testing import FakeTask, calls, fake_served
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate
from tst.unit.openenv._leak import leak_a_session, with_a_session_leak
from tst.unit.openenv._sessions import held, status

pytestmark = pytest.mark.needs("openenv_installed")

ANSWER_S = 10.0
RESET = {"type": "reset", "data": {"split": "train", "index": 0}}
STORE = {
    "type": "step",
    "data": {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": "C1", "bay": 2}},
}


def mcp_frame(method: str, **params: Any) -> dict[str, Any]:
    """OpenEnv's MCP bridge over /ws: a JSON-RPC request in an `mcp` frame."""
    return {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}}


def websocket(server: BackgroundServer, query: str = "") -> ClientConnection:
    return connect_websocket(server.url.replace("http://", "ws://") + "/ws" + query, open_timeout=ANSWER_S)


def exchange(socket: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    socket.send(json.dumps(frame))
    answer: dict[str, Any] = json.loads(socket.recv(timeout=ANSWER_S))
    return answer


def store_task() -> FakeTask:
    return FakeTask("crates", tools=[add_crate], envs=("dock",), score=1.0)


# Held while connected


def test_a_session_is_held_from_the_moment_a_websocket_connects_until_it_disconnects(serve: Serve) -> None:
    server = serve({"train": [store_task()]}, max_concurrent_envs=2)

    with websocket(server):
        connected = held(server, websocket=1)
    disconnected = held(server, websocket=0)

    assert connected and disconnected
    assert status(server)["connections"] == 0


def test_status_counts_the_sessions_clients_hold_on_ws_and_none_without_a_client(
    serve: Serve, connect: Connect
) -> None:
    server = serve({"train": [store_task()]}, max_concurrent_envs=3)
    first, second = (
        connect(server.url, message_timeout_s=ANSWER_S),
        connect(server.url, message_timeout_s=ANSWER_S),
    )
    first.reset(split="train", index=0)
    second.reset(split="train", index=0)

    playing = status(server)
    first.close()

    assert playing["sessions"] == {"held": 2, "websocket": 2, "without_client": 0}
    assert (playing["connections"], playing["live_episodes"]) == (2, 2)
    assert held(server, websocket=1)


def test_a_session_made_with_no_client_connected_is_counted_as_held_without_a_client(
    serve: Serve, connect: Connect
) -> None:
    server = serve(
        with_a_session_leak(build_served_app(fake_served({"train": [store_task()]}), max_concurrent_envs=3))
    )
    leak_a_session(server)
    client = connect(server.url, message_timeout_s=ANSWER_S)
    client.reset(split="train", index=0)

    assert status(server)["sessions"] == {"held": 2, "websocket": 1, "without_client": 1}
    assert status(server)["connections"] == 1
    client.close()
    assert held(server, websocket=0, without_client=1)


# Never shared


def test_a_websocket_naming_another_clients_session_is_refused_and_the_owner_plays_on(serve: Serve) -> None:
    task = store_task()
    app = build_served_app(fake_served({"train": [task]}), max_concurrent_envs=2)
    server = serve(app)
    with websocket(server) as owner:
        exchange(owner, RESET)
        # What an intruder would need (no client can learn it: mcp frames are refused, see below).
        (session_id,) = app.state.openenv_server._sessions

        with websocket(server, f"?session_id={session_id}") as intruder:
            refusal = json.loads(intruder.recv(timeout=ANSWER_S))
            with pytest.raises(ConnectionClosed):
                intruder.recv(timeout=ANSWER_S)
        stored = exchange(owner, STORE)
        sessions_then = status(server)["sessions"]

    assert refusal == {"type": "error", "data": {"message": ATTACH_REFUSED, "code": "SESSION_ERROR"}}
    assert "Connect to /ws without `session_id`" in refusal["data"]["message"]
    assert intruder.close_code == 1008
    assert stored["data"]["observation"]["result"] == "stored dry crate C1 in bay 2"
    assert calls(task.episodes[0]) == [("add_crate", {"crate": "C1", "bay": 2})]
    assert sessions_then == {"held": 1, "websocket": 1, "without_client": 0}


@pytest.mark.parametrize("query", ["?session_id=not-a-session", "?session_id="], ids=["unknown", "empty"])
def test_a_websocket_naming_any_session_is_refused_the_same_way_and_holds_none(
    serve: Serve, query: str
) -> None:
    server = serve({"train": [store_task()]}, max_concurrent_envs=1)

    with websocket(server, query) as refused:
        refusal = json.loads(refused.recv(timeout=ANSWER_S))

    assert refusal["data"] == {"message": ATTACH_REFUSED, "code": "SESSION_ERROR"}
    assert held(server, websocket=0)


@pytest.mark.parametrize(
    "frame",
    [
        mcp_frame("openenv/session/create"),
        mcp_frame("openenv/session/close", session_id="another-clients-session"),
        mcp_frame("tools/list"),
    ],
    ids=["create", "close", "tools-list"],
)
def test_an_mcp_frame_over_ws_is_refused_so_no_client_learns_or_closes_a_session_and_it_plays_on(
    serve: Serve, frame: dict[str, Any]
) -> None:
    task = store_task()
    server = serve({"train": [task]}, max_concurrent_envs=1)
    escaped = json.dumps(frame).replace('"mcp"', '"\\u006dcp"')
    with websocket(server) as client:
        exchange(client, RESET)
        plain = exchange(client, frame)
        client.send(escaped)
        hidden = json.loads(client.recv(timeout=ANSWER_S))
        stored = exchange(client, STORE)

    assert (plain["type"], plain["data"]["code"]) == ("error", "UNKNOWN_TYPE")
    assert "MCP messages are not served" in plain["data"]["message"]
    assert hidden == plain
    assert stored["data"]["observation"]["result"] == "stored dry crate C1 in bay 2"
    assert held(server, websocket=0)
