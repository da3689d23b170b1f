"""What the server serves: exactly the routes `SERVED_ROUTES` lists, each other route OpenEnv has
reviewed in `NOT_SERVED_ROUTES`, and no MCP at all (no route that makes a session outside `/ws`).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from openenv.core.env_server import HTTPEnvServer
from starlette.routing import BaseRoute, Route, WebSocketRoute
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as connect_websocket

import agent_env
from agent_env.openenv import (
    NOT_SERVED_ROUTES,
    SERVED_ROUTES,
    AgentEnvAction,
    AgentEnvEnvironment,
    AgentEnvObservation,
    AgentEnvState,
    BackgroundServer,
    build_app,
)
from agent_env.openenv._context import ServerContext
from agent_env.openenv._sessions import SessionServer
from agent_env.testing import FakeTask, fake_served
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate
from tst.support.wharf import WHARF

pytestmark = pytest.mark.needs("openenv_installed")

CREATE_SESSION = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
NO_SESSIONS = {"held": 0, "websocket": 0, "without_client": 0}


def keys(routes: list[BaseRoute]) -> set[str]:
    """Routes as the lists name them: `METHOD /path` (HEAD aside), `WEBSOCKET /path`."""
    named = set()
    for route in routes:
        if isinstance(route, WebSocketRoute):
            named.add(f"WEBSOCKET {route.path}")
        elif isinstance(route, Route):
            named |= {f"{method} {route.path}" for method in route.methods or () if method != "HEAD"}
        else:
            named.add(f"{type(route).__name__} {getattr(route, 'path', '')}")
    return named


def openenv_registers(mode: str) -> set[str]:
    """The routes OpenEnv's own server registers for this environment on a bare FastAPI app."""
    app = FastAPI()
    context = ServerContext("tasks", fake_served({"train": [FakeTask("crates")]}), max_concurrent_envs=2)
    server = HTTPEnvServer(
        partial(AgentEnvEnvironment, context),
        AgentEnvAction,
        AgentEnvObservation,
        env_name="tasks",
        max_concurrent_envs=2,
        state_cls=AgentEnvState,
    )
    server.register_routes(app, mode=mode)
    return keys(app.routes)


def sessions(server: BackgroundServer, env_name: str = "tasks") -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{server.url}/{env_name}/status", timeout=10).json()
    return body["sessions"]


def test_the_app_serves_exactly_the_routes_served_routes_lists(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    served = keys(server.app.routes)

    assert served == set(SERVED_ROUTES)
    assert {"WEBSOCKET /ws", "GET /{env_name}/status", "GET /health"} <= served


@pytest.mark.parametrize("mode", ["production", "simulation"])
def test_every_route_openenv_registers_is_either_served_or_listed_with_why_it_is_not(mode: str) -> None:
    registered = openenv_registers(mode)

    assert registered - set(SERVED_ROUTES) - set(NOT_SERVED_ROUTES) == set(), (
        "OpenEnv registers routes nobody has reviewed: decide whether each may be served (does it make "
        "a session?) and add it to SERVED_ROUTES or NOT_SERVED_ROUTES in agent_env/openenv/_app.py"
    )
    assert set(SERVED_ROUTES) & set(NOT_SERVED_ROUTES) == set()
    assert all(why.strip() for why in [*SERVED_ROUTES.values(), *NOT_SERVED_ROUTES.values()])


def test_openenv_registers_both_mcp_routes_in_production_mode_and_the_app_serves_neither() -> None:
    registered = openenv_registers("production")

    assert {"POST /mcp", "WEBSOCKET /mcp", "WEBSOCKET /ws"} <= registered
    assert {"POST /mcp", "WEBSOCKET /mcp"} <= set(NOT_SERVED_ROUTES)


def test_a_route_a_newer_openenv_would_add_is_not_served_and_the_log_says_it_was_not_reviewed(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    register = SessionServer.register_routes

    def register_and_add_one(self: SessionServer, app: FastAPI, mode: str = "production") -> None:
        register(self, app, mode=mode)

        @app.post("/sessions/open")
        async def open_session() -> dict[str, str]:
            session_id, _ = await self._create_session()
            return {"session_id": session_id}

    monkeypatch.setattr(SessionServer, "register_routes", register_and_add_one)
    with caplog.at_level(logging.WARNING, logger="agent_env.openenv"):
        server = serve({"train": [FakeTask("crates")]})

    answer = httpx.post(f"{server.url}/sessions/open", timeout=10)

    assert answer.status_code == 404
    assert sessions(server) == NO_SESSIONS
    assert [record.getMessage() for record in caplog.records] == [
        "not serving POST /sessions/open: OpenEnv registers it and nobody has reviewed it "
        "(SERVED_ROUTES in agent_env.openenv._app)"
    ]


def test_http_mcp_is_not_served_so_no_request_to_it_makes_a_session(serve: Serve) -> None:
    task = FakeTask("crates", tools=[add_crate])
    server = serve({"train": [task]}, max_concurrent_envs=1)

    answers = [httpx.post(f"{server.url}/mcp", json=body, timeout=10) for body in (CREATE_SESSION,) * 3]
    answers += [httpx.post(f"{server.url}/mcp", json=LIST_TOOLS, timeout=10)]
    answers += [httpx.get(f"{server.url}/mcp", timeout=10)]

    assert [answer.status_code for answer in answers] == [404] * 5
    assert all("session_id" not in answer.text for answer in answers)
    assert sessions(server) == NO_SESSIONS
    assert task.episodes == []


def test_a_websocket_to_mcp_is_refused_before_it_opens_so_it_holds_no_session(serve: Serve) -> None:
    server = serve({"train": [FakeTask("crates")]}, max_concurrent_envs=1)

    with pytest.raises(InvalidStatus) as refused:
        connect_websocket(server.url.replace("http://", "ws://") + "/mcp", open_timeout=10)

    assert refused.value.response.status_code == 403
    assert sessions(server) == NO_SESSIONS


def test_with_mcp_refused_the_one_session_the_server_holds_is_a_trainers_and_it_plays(
    serve: Serve, connect: Connect
) -> None:
    server = serve({"train": [FakeTask("crates", tools=[add_crate], score=1.0)]}, max_concurrent_envs=1)
    for _ in range(3):
        httpx.post(f"{server.url}/mcp", json=CREATE_SESSION, timeout=10)
        with pytest.raises(InvalidStatus):
            connect_websocket(server.url.replace("http://", "ws://") + "/mcp", open_timeout=10)

    client = connect(server.url, message_timeout_s=10)
    opened = client.reset(split="train", index=0)
    scored = client.step(AgentEnvAction.end_turn("Stored.").wire())

    assert opened.observation["error"] is None
    assert (scored.done, scored.reward) == (True, 1.0)


def test_the_openapi_schema_lists_no_mcp_route_and_is_titled_with_the_bundle(serve: Serve) -> None:
    server = serve(build_app(WHARF))

    schema = httpx.get(f"{server.url}/openapi.json", timeout=10).json()

    assert "/mcp" not in schema["paths"]
    assert {"/health", "/{env_name}/splits", "/{env_name}/status"} <= set(schema["paths"])
    assert schema["info"]["title"] == "wharf"
    assert schema["info"]["description"].startswith(agent_env.load_bundle(WHARF).config.description)
    assert schema["info"]["version"] == agent_env.__version__


@pytest.mark.parametrize("variable", ["ENABLE_WEB_INTERFACE", "OPENENV_MODE"])
def test_openenvs_web_interface_and_mode_variables_change_nothing_the_server_serves(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "true" if variable == "ENABLE_WEB_INTERFACE" else "simulation")

    server = serve(build_app(WHARF))

    assert keys(server.app.routes) == set(SERVED_ROUTES)
    assert httpx.get(f"{server.url}/web", timeout=10).status_code == 404
    assert httpx.post(f"{server.url}/reset", json={}, timeout=10).status_code == 404
