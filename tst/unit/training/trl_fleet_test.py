"""A fleet of in-process servers: what `AgentEnv` refuses to take as one, and servers it leaves out.

The fleet's run against `agent-env serve` processes, a server killed among them, is the integration
tier's (`tst/integration/training/fleet_test.py`).
"""

from __future__ import annotations

import contextlib
import logging
import pickle
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agent_env.openenv import BackgroundServer, build_served_app
from agent_env.testing import fake_served
from agent_env.training.trl import AgentEnv, FleetSettings, ServerUnavailableError
from agent_env.training.trl import fleet as fleet_module
from tst.support.addresses import answer_names, free_port_on
from tst.support.serving import Serve
from tst.unit.training._trl import dock_task

HOSTS = ("127.0.0.5", "127.0.0.6")
NAME = "agentenv-unit.test"


@pytest.mark.parametrize(
    ("url", "options", "fix"),
    [
        ([], {}, "AgentEnv needs a server URL or a list of them, got []"),
        (
            ["http://a:1", "http://a:1/"],
            {},
            "the servers list http://a:1 more than once: name each server once",
        ),
        (["http://a:1", "http://b:1"], {"discover": "dns"}, "discover='dns' takes one URL, whose host names"),
        ("http://a:1", {"discover": "mdns"}, "discover must be one of 'dns' or None, got 'mdns'"),
        (
            "http://a:1",
            {"discover": "dns", "token": {"http://a:1": "t"}},
            "pass one token for all, not a dict",
        ),
        (["http://a:1", "http://b:1"], {"token": {"http://a:1": "t"}}, "token names no token for http://b:1"),
        (["http://a:1"], {"token": {"http://a:1": "t", "http://c:1": "t"}}, "not given: http://c:1"),
        (
            ["http://a:1"],
            {"token": {"http://a:1": ""}},
            "a server's token is empty: give each server its token",
        ),
    ],
)
def test_what_cannot_name_a_fleet_is_refused_before_any_server_is_asked_saying_how_to_fix_it(
    url: Any, options: dict[str, Any], fix: str
) -> None:
    with pytest.raises(ValueError) as refused:
        AgentEnv(url, **options)

    assert fix in str(refused.value)


def test_the_fleets_tokens_stay_out_of_its_repr_and_travel_in_its_pickle() -> None:
    fleet = FleetSettings.of(
        ["http://a:1", "http://b:1"], token={"http://a:1": "alpha-1", "http://b:1": "beta-2"}
    )

    shown = repr(fleet)
    again = pickle.loads(pickle.dumps(fleet))

    assert "alpha-1" not in shown and "beta-2" not in shown
    assert (again.token_for("http://a:1"), again.token_for("http://b:1")) == ("alpha-1", "beta-2")


def test_a_fleet_whose_every_server_stopped_answering_says_so_naming_each(serve: Serve) -> None:
    servers = [serve({"train": [dock_task()]}) for _ in range(2)]
    with AgentEnv([server.url for server in servers]) as env:
        dock = env.factory
        row = dict(env.dataset[0])
        for server in servers:
            server.stop()
        with pytest.raises(ServerUnavailableError) as refused:
            dock().reset(**row)  # type: ignore[operator]

    message = str(refused.value)
    assert message.startswith("no server of the fleet takes a session (")
    assert all(f"{server.url}: no answer to GET /status (ConnectError" in message for server in servers)


def held_on(server: BackgroundServer) -> int:
    return int(httpx.get(f"{server.url}/tasks/status", timeout=10).json()["sessions"]["held"])


@contextlib.contextmanager
def served_on(host: str, port: int, tasks: list[Any]) -> Iterator[BackgroundServer]:
    server = BackgroundServer(build_served_app(fake_served({"train": tasks})), host=host, port=port).start()
    try:
        yield server
    finally:
        server.stop()


def test_a_server_the_name_resolves_to_later_that_serves_other_tasks_is_left_out_and_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    names = answer_names(monkeypatch)
    monkeypatch.setattr(fleet_module, "RESOLVE_EVERY_S", 0.0)
    port = free_port_on(HOSTS)
    names[NAME] = [HOSTS[0]]
    with (
        served_on(HOSTS[0], port, [dock_task()]) as first,
        served_on(HOSTS[1], port, [dock_task("other")]) as other,
        AgentEnv(f"http://{NAME}:{port}", discover="dns") as env,
        caplog.at_level(logging.WARNING, logger="agent_env.training.trl"),
    ):
        names[NAME] = list(HOSTS)
        dock = env.factory
        row = dict(env.dataset[0])
        environments = [dock() for _ in range(3)]  # type: ignore[operator]
        for environment in environments:
            environment.reset(**row)
        rewards = [
            (environment.add_crate(crate="C1", bay=2), environment.get_reward())
            for environment in environments
        ]
        held = [held_on(server) for server in (first, other)]

    assert rewards == [("stored dry crate C1 in bay 2", 1.0)] * 3
    warned = [record.getMessage() for record in caplog.records]
    assert any(
        message.startswith(
            f"placing no session on {other.url}: it serves other tasks than the fleet (fingerprint sha256:"
        )
        for message in warned
    ), warned
    assert held == [3, 0]
