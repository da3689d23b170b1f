"""`AgentEnv` over a fleet of `agent-env serve` processes on loopback, driven as TRL drives it.

The servers are real processes serving the example bundle; the environments are the factory's own
classes, reset with dataset rows and played with keyword calls, as GRPOTrainer plays them. Discovery
resolves a name through the process's resolver (`socket.getaddrinfo`), which the test answers with
three loopback addresses sharing one port, as a Kubernetes headless Service's pods do.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env.training.trl import AgentEnv, FleetMismatchError, ServerAtCapacityError, ServerUnavailableError
from agent_env.training.trl._fleet import RETRY_S
from tst.integration._fleet import PLAY_THREE, held, play_store
from tst.support.addresses import answer_names, free_port_on
from tst.support.cli_server import agent_env_serves
from tst.support.wharf import WHARF

TRIO_HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
NAME = "agentenv-fleet.test"
CHILD_S = 180.0
ROOT = Path(__file__).resolve().parents[3]


def dock_rows(env: AgentEnv) -> tuple[type, dict[str, Any]]:
    """The dock toolset's class, and `store-crate-000`'s row as TRL passes it to `reset`."""
    row = dict(env.dataset[0])
    assert row.pop("environment") == "dock"
    factory = env.factory
    assert isinstance(factory, dict)
    return factory["dock"], row


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, list[str]]]:
    """Three servers of the example bundle, one per address of `TRIO_HOSTS`, all on one port."""
    where = tmp_path_factory.mktemp("trio")
    port = free_port_on(TRIO_HOSTS)
    servers = [(WHARF, ("--host", host, "--port", str(port))) for host in TRIO_HOSTS]
    with agent_env_serves(servers, log=where, tmpdir=where, name="trio") as started:
        yield port, [url for _, url in started]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    return answer_names(monkeypatch)


def test_a_trainers_48_sessions_spread_16_16_16_over_three_servers_and_one_killed_costs_only_its_episodes(
    tmp_path: Path,
) -> None:
    servers = [(WHARF, ()) for _ in range(3)]
    with agent_env_serves(servers, log=tmp_path, tmpdir=tmp_path) as started:
        urls = [url for _, url in started]
        with AgentEnv(urls) as env:
            dock, row = dock_rows(env)
            environments = [dock() for _ in range(48)]

            for environment in environments:
                environment.reset(**row)
            spread = [held(url) for url in urls]
            killed, killed_url = started[1]
            killed.kill()
            killed.wait()
            played = [play_store(environment) for environment in environments]
            lost = [reward for reward, _ in played if reward is None]
            later = []
            for environment in environments:
                environment.reset(**row)
                later.append(play_store(environment))
            left = [held(urls[0]), held(urls[2])]

            port = killed_url.rsplit(":", 1)[1]
            with agent_env_serves(
                [(WHARF, ("--port", port))], log=tmp_path, tmpdir=tmp_path, name="again"
            ) as [(_, restarted_url)]:
                time.sleep(RETRY_S)  # a server left out is asked again this long after
                newcomers = [dock() for _ in range(16)]
                for environment in newcomers:
                    environment.reset(**row)
                again = held(killed_url)
                newcomers_played = [play_store(environment)[0] for environment in newcomers]
                env.close()

    assert spread == [16, 16, 16]
    assert len(lost) == 16, "the episodes on the killed server score None, the others their score"
    assert sorted({reward for reward, _ in played}, key=str) == [1.0, None]
    assert [reward for reward, _ in later] == [1.0] * 48 and all(failed == 0 for _, failed in later)
    assert left == [24, 24]
    assert restarted_url == killed_url
    assert again == 16
    assert newcomers_played == [1.0] * 16


def test_discovery_places_sessions_on_every_address_the_name_resolves_to_and_resolves_again_after_a_loss(
    trio: tuple[int, list[str]], resolver: dict[str, list[str]]
) -> None:
    port, urls = trio
    resolver[NAME] = list(TRIO_HOSTS)

    with AgentEnv(f"http://{NAME}:{port}", discover="dns") as env:
        dock, row = dock_rows(env)
        environments = [dock() for _ in range(6)]
        for environment in environments:
            environment.reset(**row)
        spread = [held(url) for url in urls]
        rewards = [play_store(environment)[0] for environment in environments]
        discovered = env.urls
        shown = repr(env)

    assert discovered == tuple(urls) == tuple(f"http://{host}:{port}" for host in TRIO_HOSTS)
    assert spread == [2, 2, 2]
    assert rewards == [1.0] * 6
    assert shown == f"AgentEnv('http://{NAME}:{port}', discover='dns', split='train')"


def test_servers_that_do_not_serve_the_same_tasks_are_refused_naming_the_ones_that_differ(
    trio: tuple[int, list[str]], tmp_path: Path
) -> None:
    _, urls = trio
    changed = tmp_path / "wharf"
    shutil.copytree(WHARF, changed)
    tasks = changed / "tasks" / "train.jsonl"
    lines = tasks.read_text().splitlines()
    first = json.loads(lines[0])
    first["turns"][0] = first["turns"][0].replace("C17", "C18")
    tasks.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")

    with (
        agent_env_serves([(changed, ())], log=tmp_path, tmpdir=tmp_path) as [(_, other)],
        pytest.raises(FleetMismatchError) as refused,
    ):
        AgentEnv([urls[0], other, urls[1]])

    message = str(refused.value)
    assert f"{other} serve sha256:" in message
    assert f"as {urls[0]}, {urls[1]} do" in message
    assert "Serve the same bundle" in message


def test_the_classes_pickle_with_the_fleet_and_spread_their_sessions_from_a_process_of_their_own(
    trio: tuple[int, list[str]],
) -> None:
    _, urls = trio
    with AgentEnv(urls) as env:
        dock, row = dock_rows(env)
        child = subprocess.run(
            [sys.executable, "-c", PLAY_THREE],
            input=pickle.dumps((dock, row, urls)),
            capture_output=True,
            cwd=ROOT,
            timeout=CHILD_S,
            check=False,
        )

    assert child.returncode == 0, child.stderr.decode()[-2000:]
    assert json.loads(child.stdout) == [[1, 1, 1], [1.0, 1.0, 1.0]]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Two servers of two sessions each, each with a token of its own: `alpha`, `beta`."""
    where = tmp_path_factory.mktemp("guarded")
    servers = [(WHARF, ("--max-concurrent-envs", "2", "--token", token)) for token in ("alpha", "beta")]
    with agent_env_serves(servers, log=where, tmpdir=where, name="guarded") as started:
        yield [url for _, url in started]


def test_each_server_gets_its_own_token_and_a_full_fleet_refuses_with_the_fleets_numbers(
    guarded: list[str],
) -> None:
    tokens = dict(zip(guarded, ("alpha", "beta"), strict=True))
    with AgentEnv(guarded, token=tokens) as env:
        dock, row = dock_rows(env)
        environments = [dock() for _ in range(5)]
        for environment in environments[:4]:
            environment.reset(**row)
        spread = [held(url, token) for url, token in tokens.items()]
        with pytest.raises(ServerAtCapacityError) as full:
            environments[4].reset(**row)
        rewards = [play_store(environment)[0] for environment in environments[:4]]

    assert spread == [2, 2]
    assert rewards == [1.0] * 4
    message = str(full.value)
    assert "every server of the fleet is at its session limit: 2 answering hold 4 sessions at most" in message
    assert f"{guarded[0]}: 2/2 held; {guarded[1]}: 2/2 held" in message
    assert "raise MAX_CONCURRENT_ENVS" in message and "or add servers" in message


def test_a_fleet_without_a_token_for_each_server_is_refused_before_asking_any(guarded: list[str]) -> None:
    with pytest.raises(ValueError, match=f"token names no token for {guarded[1]}: give one for each server"):
        AgentEnv(guarded, token={guarded[0]: "alpha"})
    with pytest.raises(ServerUnavailableError, match=f"the server at {guarded[1]}/ refused the bearer token"):
        AgentEnv(guarded, token={guarded[0]: "alpha", guarded[1]: "alpha"})
