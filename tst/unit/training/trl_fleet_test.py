"""A fleet of in-process servers: what `AgentEnv` refuses to take as one, and servers it leaves out.

The fleet's run against `agent-env serve` processes, a server killed among them, is the integration
tier's (`tst/integration/training/fleet_test.py`).
"""

from __future__ import annotations

import contextlib
import logging
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_env.openenv import BackgroundServer, build_app, build_served_app
from agent_env.testing import fake_served
from agent_env.training.trl import (
    AgentEnv,
    FleetMismatchError,
    FleetSettings,
    ServerUnavailableError,
    ToolCallError,
    _fleet as fleet_module,
)
from tst.support.addresses import answer_names, free_port_on
from tst.support.bundles import a_task, make_bundle
from tst.support.serving import Serve
from tst.unit.training._trl import dock_task

pytestmark = pytest.mark.needs("trl_installed")

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


def held_on(server: BackgroundServer, env_name: str = "tasks") -> int:
    return int(httpx.get(f"{server.url}/{env_name}/status", timeout=10).json()["sessions"]["held"])


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
            f"placing no session on {other.url}: it serves other tasks or bundle content than the run "
            "started with (fingerprint sha256:"
        )
        for message in warned
    ), warned
    assert held == [3, 0]


EXPECTS_EMMA = a_task(verifiers=[{"type": "items", "env": "shelf", "expected": ["Emma"]}])


def shelf_bundle(root: Path, *, expects_emma: bool = False) -> Path:
    """The shelf bundle (shelving Dune scores 1), or a copy whose verifier expects Emma instead."""
    return make_bundle(root, tasks={"train": [EXPECTS_EMMA]} if expects_emma else None)


def fingerprint_of(server: BackgroundServer) -> str:
    return str(httpx.get(f"{server.url}/shelf/status", timeout=10).json()["tasks_fingerprint"])


def shelve_dune(environment: Any, row: dict[str, Any]) -> float | None:
    """One rollout that shelves Dune, as TRL plays it: reset, the tool call, the reward."""
    environment.reset(**row)
    with contextlib.suppress(ToolCallError):
        environment.put_book(title="Dune")
    reward: float | None = environment.get_reward()
    return reward


def test_a_fleet_whose_one_server_serves_a_copy_with_other_verifier_expectations_is_refused_at_the_start(
    serve: Serve, tmp_path: Path
) -> None:
    servers = [
        serve(build_app(shelf_bundle(tmp_path / "one" / "shelf"))),
        serve(build_app(shelf_bundle(tmp_path / "two" / "shelf"))),
        serve(build_app(shelf_bundle(tmp_path / "three" / "shelf", expects_emma=True))),
    ]

    with pytest.raises(FleetMismatchError) as refused:
        AgentEnv([server.url for server in servers])

    assert str(refused.value).startswith(
        f"the servers do not serve the same tasks and bundle content: {servers[2].url} serve "
        f"{fingerprint_of(servers[2])}, not {fingerprint_of(servers[0])} as {servers[0].url}, "
        f"{servers[1].url} do"
    )


def restarted(server: BackgroundServer, bundle: Path) -> BackgroundServer:
    """The server stopped, and another serving `bundle` started on its port."""
    server.stop()
    return BackgroundServer(build_app(bundle), port=server.port).start()


def test_a_server_restarted_mid_run_with_other_verifier_expectations_is_left_out_and_its_sessions_move(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = serve(build_app(shelf_bundle(tmp_path / "one" / "shelf")))
    other = serve(build_app(shelf_bundle(tmp_path / "two" / "shelf")))
    before = fingerprint_of(first)
    with AgentEnv([first.url, other.url]) as env, caplog.at_level(logging.WARNING, "agent_env.training.trl"):
        shelf = env.factory
        row = dict(env.dataset[0])
        environments = [shelf() for _ in range(4)]  # type: ignore[operator]
        played = [shelve_dune(environment, row) for environment in environments]
        changed = restarted(first, shelf_bundle(tmp_path / "changed" / "shelf", expects_emma=True))
        try:
            after = fingerprint_of(changed)
            rounds = [[shelve_dune(environment, row) for environment in environments] for _ in range(2)]
            held = [held_on(server, "shelf") for server in (changed, other)]
        finally:
            changed.stop()

    assert played == [1.0] * 4
    assert 0.0 not in rounds[0] and rounds[1] == [1.0] * 4, rounds
    assert held == [0, 4]
    assert left_out(first.url, after, before) in caplog.messages


def test_a_server_restarted_with_a_changed_copy_is_left_out_by_the_next_status_read_before_any_placement(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fleet_module, "STATUS_EVERY_S", 0.0)  # every placement reads the statuses
    first = serve(build_app(shelf_bundle(tmp_path / "one" / "shelf")))
    other = serve(build_app(shelf_bundle(tmp_path / "two" / "shelf")))
    before = fingerprint_of(first)
    with AgentEnv([first.url, other.url]) as env, caplog.at_level(logging.WARNING, "agent_env.training.trl"):
        shelf = env.factory
        row = dict(env.dataset[0])
        changed = restarted(first, shelf_bundle(tmp_path / "changed" / "shelf", expects_emma=True))
        try:
            after = fingerprint_of(changed)
            rewards = [shelve_dune(shelf(), row) for _ in range(3)]  # type: ignore[operator]
            held = [held_on(server, "shelf") for server in (changed, other)]
        finally:
            changed.stop()

    assert rewards == [1.0] * 3
    assert held == [0, 3]
    assert left_out(first.url, after, before) in caplog.messages


def test_a_server_restarted_between_status_reads_with_a_changed_copy_is_left_out_at_its_first_reset(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fleet_module, "STATUS_EVERY_S", 3600.0)  # the status read at the start is the last
    first = serve(build_app(shelf_bundle(tmp_path / "one" / "shelf")))
    other = serve(build_app(shelf_bundle(tmp_path / "two" / "shelf")))
    before = fingerprint_of(first)
    with AgentEnv([first.url, other.url]) as env, caplog.at_level(logging.WARNING, "agent_env.training.trl"):
        shelf = env.factory
        row = dict(env.dataset[0])
        assert shelve_dune(shelf(), row) == 1.0  # type: ignore[operator]
        changed = restarted(first, shelf_bundle(tmp_path / "changed" / "shelf", expects_emma=True))
        try:
            after = fingerprint_of(changed)
            environments = [shelf() for _ in range(4)]  # type: ignore[operator]
            rounds = [[shelve_dune(environment, row) for environment in environments] for _ in range(2)]
            held = [held_on(server, "shelf") for server in (changed, other)]
        finally:
            changed.stop()

    assert 0.0 not in rounds[0] and rounds[0].count(None) == 1, rounds
    assert rounds[1] == [1.0] * 4
    assert held == [0, 4]
    assert left_out(first.url, after, before) in caplog.messages


def test_a_single_server_restarted_with_a_changed_copy_stops_the_run_naming_it_and_both_fingerprints(
    serve: Serve, tmp_path: Path
) -> None:
    server = serve(build_app(shelf_bundle(tmp_path / "one" / "shelf")))
    before = fingerprint_of(server)
    with AgentEnv(server.url) as env:
        shelf = env.factory
        row = dict(env.dataset[0])
        played = shelve_dune(shelf(), row)  # type: ignore[operator]
        changed = restarted(server, shelf_bundle(tmp_path / "changed" / "shelf", expects_emma=True))
        try:
            after = fingerprint_of(changed)
            environment = shelf()  # type: ignore[operator]
            environment.reset(**row)
            with pytest.raises(FleetMismatchError) as in_a_tool:
                environment.put_book(title="Dune")
            with pytest.raises(FleetMismatchError) as at_the_reward:
                environment.get_reward()
        finally:
            changed.stop()

    assert played == 1.0
    assert str(in_a_tool.value) == str(at_the_reward.value)
    assert str(at_the_reward.value) == (
        f"the server at {server.url} serves other tasks or bundle content than the run started with "
        f"(fingerprint {after}, not {before}): it was restarted with another copy of the bundle, whose "
        "rewards are not this run's. Serve the run's bundle there again, or start a new run (a new "
        "AgentEnv) on what it serves now"
    )


def left_out(url: str, now: str, before: str) -> str:
    """The warning a fleet logs when it leaves out a server whose fingerprint changed."""
    return (
        f"placing no session on {url}: it serves other tasks or bundle content than the run started "
        f"with (fingerprint {now}, not {before})"
    )
