"""AgentEnv against a server that requires a bearer token: it sends the token, or fails at once saying so."""

from __future__ import annotations

import pickle

import httpx
import pytest

from agent_env import load_bundle
from agent_env._contexts import VerifierContext
from agent_env.client._session import SessionClient
from agent_env.openenv import TOKEN_VARIABLE, BackgroundServer, build_served_app
from agent_env.testing import FakeTask, calls, fake_served
from agent_env.training.trl import TASK_OVER, AgentEnv, ServerUnavailableError
from tst.support.serving import Serve
from tst.support.tools import add_crate
from tst.support.wharf import WHARF
from tst.unit.training._trl import Open, trl_tools

pytestmark = pytest.mark.needs("trl_installed")

TOKEN = "train-me-0123"


def stored(context: VerifierContext) -> float:
    return 1.0 if calls(context) else 0.0


def guarded(serve: Serve) -> tuple[BackgroundServer, FakeTask]:
    task = FakeTask("store", tools=[add_crate], envs=("dock",), score=stored)
    return serve(build_served_app(fake_served({"train": [task]}), token=TOKEN)), task


def connections(server: BackgroundServer) -> int:
    answer = httpx.get(f"{server.url}/tasks/status", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    return int(answer.json()["connections"])


def test_with_the_token_agentenv_lists_plays_and_scores_and_its_classes_keep_the_token_out_of_reprs(
    serve: Serve, open_env: Open
) -> None:
    server, _ = guarded(serve)
    env = open_env(server.url, token=TOKEN)
    factory = pickle.loads(pickle.dumps(env.factory))
    environment = factory()
    tools = trl_tools(environment)

    environment.reset(**env.dataset[0])
    assert tools["add_crate"](crate="C1", bay=2) == "stored dry crate C1 in bay 2"
    assert tools["end_turn"](reply="Stored.") == TASK_OVER
    assert environment.get_reward() == 1.0
    assert TOKEN not in repr(factory._settings)


def test_agentenv_sends_agentenv_token_from_the_environment_when_none_is_passed(
    serve: Serve, open_env: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = guarded(serve)
    monkeypatch.setenv(TOKEN_VARIABLE, TOKEN)

    env = open_env(server.url)

    assert len(env.dataset) == 1


@pytest.mark.parametrize(
    ("token", "says"),
    [(None, "requires a bearer token"), ("wrong-token", "refused the bearer token: check it")],
    ids=["no token", "a wrong token"],
)
def test_without_the_right_token_agentenv_fails_at_once_saying_how_to_pass_it_and_opens_no_session(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, token: str | None, says: str
) -> None:
    server, task = guarded(serve)
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)

    with pytest.raises(ServerUnavailableError, match=says) as failed:
        AgentEnv(server.url, token=token)

    assert "AgentEnv(url, token=...)" in str(failed.value) and TOKEN_VARIABLE in str(failed.value)
    assert task.episodes == []
    assert connections(server) == 0


def test_a_session_refused_for_its_token_says_the_server_wants_one(serve: Serve) -> None:
    server, task = guarded(serve)

    with pytest.raises(ServerUnavailableError, match="requires a bearer token"):
        SessionClient(server.url, connect_timeout_s=5).open()

    assert task.episodes == []


def test_agentenv_local_with_a_token_serves_a_bundle_that_requires_it_and_uses_it() -> None:
    with AgentEnv.local(WHARF, token=TOKEN) as env:
        assert len(env.dataset) == len(load_bundle(WHARF).tasks("train"))
        assert httpx.get(f"{env.url}/health", timeout=10).status_code == 401
