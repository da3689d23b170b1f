"""Anonymous clients cannot fill the server: `/mcp` makes no session, over HTTP or a WebSocket.

Against `agent-env serve BUNDLE --max-concurrent-envs 8` (no token, loopback), 8 anonymous HTTP
`POST /mcp` `openenv/session/create` requests each used to get a session that held a slot until
closed, and nothing closed it: from then on every trainer's reset was refused for capacity while
`/status` showed nothing connected. The server is the command a user runs, a process of its own;
the attempts come first, then a trainer opens all 8 sessions at once and plays each to its score.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect as connect_websocket

from agent_env.training.trl import AgentEnv
from tst.support.cli_server import agent_env_serve
from tst.support.waiting import until
from tst.support.wharf import WHARF, reference_play

CAPACITY = 8
ATTEMPTS = CAPACITY + 1
ANSWER_S = 10.0
SETTLED_S = 30.0
CREATE_SESSION = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
NO_SESSIONS = {"held": 0, "websocket": 0, "without_client": 0}


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    """`agent-env serve examples/wharf --max-concurrent-envs 8` on a free loopback port; stopped after."""
    options = ("--max-concurrent-envs", str(CAPACITY))
    with agent_env_serve(WHARF, *options, log=tmp_path / "serve.log", tmpdir=tmp_path) as (_, served):
        yield served


def sessions(url: str) -> dict[str, int]:
    body: dict[str, Any] = httpx.get(f"{url}/wharf/status", timeout=ANSWER_S).json()
    return body["sessions"]


def session_over_http(url: str) -> str | None:
    """The session id an anonymous `POST /mcp` got, if any."""
    answer = httpx.post(f"{url}/mcp", json=CREATE_SESSION, timeout=ANSWER_S)
    if answer.status_code == 404:
        return None
    made: str | None = answer.json().get("result", {}).get("session_id")
    return made


def session_over_websocket(url: str, opened: contextlib.ExitStack) -> str | None:
    """The session id an anonymous WebSocket on `/mcp` got, if any; a socket that opens stays open."""
    try:
        socket: ClientConnection = opened.enter_context(
            connect_websocket(url.replace("http://", "ws://") + "/mcp", open_timeout=ANSWER_S)
        )
    except InvalidStatus as refused:
        assert refused.response.status_code == 403
        return None
    try:
        socket.send(json.dumps(CREATE_SESSION))
        answer = json.loads(socket.recv(timeout=ANSWER_S))
    except ConnectionClosed:  # opened, then closed (at capacity, say): no session either
        return None
    made: str | None = answer.get("result", {}).get("session_id")
    return made


def play(environment: Any, task_id: str) -> float | None:
    """Play the task's reference play through the environment's tools, as a model would; its reward."""
    for turn in reference_play(task_id).turns:
        for call in turn.all_calls:
            getattr(environment, call.tool)(**call.arguments)
        environment.end_turn(reply=turn.reply)
    reward: float | None = environment.get_reward()
    return reward


@pytest.mark.timeout(300)
def test_anonymous_mcp_sessions_are_not_made_and_a_trainer_still_opens_every_session_and_scores(
    url: str,
) -> None:
    with contextlib.ExitStack() as opened:
        over_http = [session_over_http(url) for _ in range(ATTEMPTS)]
        over_websocket = [session_over_websocket(url, opened) for _ in range(ATTEMPTS)]
        after_attempts = sessions(url)

    env = AgentEnv(url, reset_timeout_s=60, tool_timeout_s=30)
    try:
        factory = env.factory
        assert isinstance(factory, dict)
        rows = [{k: v for k, v in env.dataset[index].items()} for index in range(CAPACITY)]
        environments = [factory[row.pop("environment")]() for row in rows]
        for environment, row in zip(environments, rows, strict=True):
            environment.reset(**row)
        while_playing = sessions(url)
        task_ids = [
            httpx.post(
                f"{url}/wharf/task", json={"split": "train", "index": row["index"]}, timeout=ANSWER_S
            ).json()["task"]["id"]
            for row in rows
        ]
        rewards = [
            play(environment, task_id) for environment, task_id in zip(environments, task_ids, strict=True)
        ]
    finally:
        env.close()

    assert over_http == [None] * ATTEMPTS
    assert over_websocket == [None] * ATTEMPTS
    assert after_attempts == NO_SESSIONS
    assert while_playing == {"held": CAPACITY, "websocket": CAPACITY, "without_client": 0}
    assert rewards == [reference_play(task_id).expected_score for task_id in task_ids]
    assert all(reward is not None for reward in rewards)
    assert until(lambda: sessions(url) == NO_SESSIONS, SETTLED_S), f"left held: {sessions(url)}"
