"""A server's bearer token guards every route and the WebSocket; a refused request opens nothing."""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.routing import Route
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as connect_websocket

from agent_env._error_types import BundleError
from agent_env._errors import ArgumentError
from agent_env._origins import ALLOWED_HOSTS_VARIABLE
from agent_env.openenv import TOKEN_VARIABLE, BackgroundServer, build_served_app, resolve_token
from agent_env.openenv._serve import exposure_warning, serve as agent_env_serve
from agent_env.testing import FakeTask, fake_served
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate

pytestmark = pytest.mark.needs("openenv_installed")

TOKEN = "s3cret-token_42"


def served_tasks() -> dict[str, list[FakeTask]]:
    return {"train": [FakeTask("store", tools=[add_crate], envs=("dock",))]}


def guarded(serve: Serve, token: str = TOKEN) -> tuple[BackgroundServer, list[FakeTask]]:
    tasks = served_tasks()
    return serve(build_served_app(fake_served(tasks), token=token)), tasks["train"]


def status(server: BackgroundServer, token: str | None = TOKEN) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = httpx.get(f"{server.url}/tasks/status", headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def http_routes(server: BackgroundServer) -> list[tuple[str, str]]:
    """Every HTTP route the app serves, as (method, path) with path parameters filled in."""
    app: Any = server.app
    routes = []
    for route in app.routes:
        if isinstance(route, Route):
            path = route.path.replace("{env_name}", "tasks").replace("{path:path}", "x")
            routes += [(method, path) for method in sorted(route.methods or ()) if method != "HEAD"]
    return routes


def test_without_the_token_every_http_route_answers_401_and_says_how_to_send_it(serve: Serve) -> None:
    server, _ = guarded(serve)
    routes = http_routes(server)
    assert {("GET", "/health"), ("GET", "/tasks/status"), ("POST", "/tasks/tasks"), ("GET", "/docs")} <= set(
        routes
    )

    for method, path in routes:
        for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": TOKEN}):
            answer = httpx.request(method, server.url + path, headers=headers, timeout=10)
            assert answer.status_code == 401, (method, path, headers, answer.status_code)
            assert answer.headers["www-authenticate"] == "Bearer"
            assert TOKEN_VARIABLE in answer.json()["detail"]


def test_with_the_token_the_routes_answer_as_they_do_on_a_server_without_one(serve: Serve) -> None:
    server, _ = guarded(serve)
    headers = {"Authorization": f"Bearer {TOKEN}"}

    tasks = httpx.post(f"{server.url}/tasks/tasks", json={"split": "train"}, headers=headers, timeout=10)
    health = httpx.get(f"{server.url}/health", headers=headers, timeout=10)

    assert tasks.status_code == 200 and [t["id"] for t in tasks.json()["tasks"]] == ["store"]
    assert health.status_code == 200


@pytest.mark.parametrize("sent", [None, "not-the-token"], ids=["no token", "a wrong token"])
def test_a_websocket_without_the_right_token_is_refused_and_opens_no_session(
    serve: Serve, connect: Connect, sent: str | None
) -> None:
    server, tasks = guarded(serve)
    headers = {"Authorization": f"Bearer {sent}"} if sent else None

    with pytest.raises(Exception, match="401"):
        connect(server.url, headers=headers).reset(split="train", index=0, timeout_s=10)

    assert (status(server)["connections"], status(server)["live_episodes"]) == (0, 0)
    assert tasks[0].episodes == []


def test_a_websocket_with_the_token_plays_an_episode(serve: Serve, connect: Connect) -> None:
    server, tasks = guarded(serve)
    client = connect(server.url, headers={"Authorization": f"Bearer {TOKEN}"})

    started = client.reset(split="train", index=0, timeout_s=10)

    assert started.observation["task_id"] == "store"
    assert [e.task.id for e in tasks[0].live] == ["store"]


def test_agentenv_token_in_the_environment_is_the_servers_token_when_none_is_passed(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_VARIABLE, TOKEN)
    server = serve(build_served_app(fake_served(served_tasks())))

    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 401
    assert status(server, TOKEN)["connections"] == 0


def test_an_empty_token_requires_none(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_VARIABLE, "")
    server = serve(build_served_app(fake_served(served_tasks())))

    assert status(server, token=None)["connections"] == 0


@pytest.mark.parametrize("token", ["two words", "tab\there", "ünïcode", " padded"])
def test_a_token_that_cannot_travel_in_a_header_is_refused_when_the_app_is_built(token: str) -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        resolve_token(token)
    with pytest.raises(ValueError, match="--token"):
        build_served_app(fake_served(served_tasks()), token=token)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.7", "::", "agent-env.example", ""])
def test_off_loopback_without_a_token_serve_refuses_to_start_naming_the_variable_and_the_token_file(
    host: str,
) -> None:
    with pytest.raises(ArgumentError) as refused:
        agent_env_serve("no-such-bundle", host=host)  # refused before the bundle is even read

    message = str(refused.value)
    assert message.startswith(f"refusing to serve on {host} without a token: it is not a loopback address")
    assert TOKEN_VARIABLE in message and "--token-file PATH" in message
    assert "--insecure-no-token" in message
    assert re.search(r"--token(?!-file)", message) is None, "it must not recommend --token, which ps shows"


@pytest.fixture
def server_log_level() -> Iterator[None]:
    """`serve` sets its logger's level as it starts: put it back after the test."""
    logger = logging.getLogger("agent_env.openenv")
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
@pytest.mark.usefixtures("server_log_level")
def test_on_loopback_serve_starts_without_a_token(host: str) -> None:
    with pytest.raises(BundleError, match="no-such-bundle"):  # past the token check, to the bundle
        agent_env_serve("no-such-bundle", host=host)


@pytest.mark.usefixtures("server_log_level")
def test_off_loopback_with_a_token_or_the_insecure_flag_serve_starts_warning_who_can_run_its_tools() -> None:
    unguarded = exposure_warning("0.0.0.0", guarded=False)
    with_token = exposure_warning("10.1.2.3", guarded=True)

    with pytest.raises(BundleError):
        agent_env_serve("no-such-bundle", host="0.0.0.0", insecure_no_token=True)
    with pytest.raises(BundleError):
        agent_env_serve("no-such-bundle", host="0.0.0.0", token=TOKEN)
    assert unguarded is not None and "not a loopback address" in unguarded
    assert "with no token asked (--insecure-no-token)" in unguarded
    assert with_token is not None and "with the token" in with_token and "--token" not in with_token
    assert exposure_warning("127.0.0.1", guarded=False) is None
    assert exposure_warning("::1", guarded=False) is None
    assert exposure_warning("localhost", guarded=False) is None


# A web page must not reach the server: foreign Host headers (DNS rebinding) and foreign Origins
# (any site's page opening a WebSocket to loopback) are refused on every route, before the token.

EVIL = "http://evil.example"


def open_websocket(server: BackgroundServer, *, host: str | None = None, origin: str | None = None) -> Any:
    """A raw WebSocket to the server's `/ws`, its Host header `host` (the URL's name; the socket still
    reaches loopback) and its Origin header `origin`, if given."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    uri = f"ws://{host or f'127.0.0.1:{server.port}'}/ws"
    return connect_websocket(uri, sock=sock, origin=origin, open_timeout=10)  # type: ignore[arg-type]


def refused_websocket(server: BackgroundServer, **headers: str) -> int:
    """The status a WebSocket handshake with these headers was refused with."""
    with pytest.raises(InvalidStatus) as refused, open_websocket(server, **headers):
        pass
    status_code: int = refused.value.response.status_code
    return status_code


def test_a_websocket_from_another_sites_page_is_refused_at_its_handshake_and_opens_no_session(
    serve: Serve,
) -> None:
    server = serve(served_tasks())

    codes = [refused_websocket(server, origin=origin) for origin in (EVIL, "null", "http://localhost:3000")]

    assert codes == [403, 403, 403]
    now = status(server, token=None)
    assert (now["connections"], now["sessions"]["held"]) == (0, 0)


def test_a_websocket_from_the_servers_own_page_or_with_no_origin_plays_an_episode(serve: Serve) -> None:
    server = serve(served_tasks())

    for origin in (f"http://127.0.0.1:{server.port}", None):
        with open_websocket(server, origin=origin) as socket_:
            socket_.send(json.dumps({"type": "reset", "data": {"split": "train", "index": 0}}))
            answer = json.loads(socket_.recv(timeout=10))
            assert answer["type"] == "observation", answer
            assert answer["data"]["observation"]["task_id"] == "store"


def test_a_request_addressed_to_a_foreign_host_is_refused_on_every_route_and_the_websocket(
    serve: Serve,
) -> None:
    server = serve(served_tasks())
    evil = f"evil.example:{server.port}"

    answers = [
        httpx.get(f"{server.url}/health", headers={"Host": evil}, timeout=10),
        httpx.post(f"{server.url}/tasks/tasks", json={"split": "train"}, headers={"Host": evil}, timeout=10),
    ]

    for answer in answers:
        assert answer.status_code == 403, answer.text
        assert "evil.example" in answer.json()["detail"] and "--allow-host" in answer.json()["detail"]
    assert refused_websocket(server, host=evil) == 403
    assert status(server, token=None)["connections"] == 0


def test_an_http_request_from_another_sites_page_is_refused(serve: Serve) -> None:
    server = serve(served_tasks())

    answer = httpx.post(
        f"{server.url}/tasks/tasks", json={"split": "train"}, headers={"Origin": EVIL}, timeout=10
    )

    assert answer.status_code == 403 and "another origin" in answer.json()["detail"]


@pytest.mark.parametrize(
    "host", ["localhost", "127.0.0.1", "127.0.0.2", "[::1]", "app.localhost", "10.0.0.5", "LocalHost."]
)
def test_loopback_names_and_ip_addresses_are_answered(serve: Serve, host: str) -> None:
    server = serve(served_tasks())

    answer = httpx.get(f"{server.url}/health", headers={"Host": f"{host}:{server.port}"}, timeout=10)

    assert answer.status_code == 200, answer.text


def test_a_host_the_server_is_told_to_allow_is_answered_with_its_pages_origin(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = serve(served_tasks(), allowed_hosts=["agent-env.example"])
    monkeypatch.setenv(ALLOWED_HOSTS_VARIABLE, "other.example, agent-env.example")
    from_environment = serve(served_tasks())

    for server in (given, from_environment):
        name = f"agent-env.example:{server.port}"
        answer = httpx.get(
            f"{server.url}/health", headers={"Host": name, "Origin": f"http://{name}"}, timeout=10
        )
        assert answer.status_code == 200, answer.text
        with open_websocket(server, host=name, origin=f"http://{name}"):
            pass
        assert refused_websocket(server, host=name, origin=EVIL) == 403


def test_a_foreign_origin_is_refused_even_with_the_token_and_the_token_is_still_required(
    serve: Serve,
) -> None:
    server, _ = guarded(serve)
    headers = {"Authorization": f"Bearer {TOKEN}", "Origin": EVIL}

    assert httpx.get(f"{server.url}/health", headers=headers, timeout=10).status_code == 403
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 401


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr"])
def test_the_bearer_scheme_is_case_insensitive_as_http_has_it(serve: Serve, scheme: str) -> None:
    server, _ = guarded(serve)

    answer = httpx.get(f"{server.url}/health", headers={"Authorization": f"{scheme} {TOKEN}"}, timeout=10)

    assert answer.status_code == 200, answer.text
