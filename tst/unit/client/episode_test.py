"""`ClientEpisode`: one episode as the trainer's side and eval both play it, each answer read by one rule."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.types import ASGIApp

from agent_env._contexts import VerifierContext
from agent_env.client._deadlines import Deadlines
from agent_env.client._episode import ClientEpisode, next_prompt
from agent_env.client._session import SessionClient
from agent_env.client._tools import TASK_OVER
from agent_env.openenv import build_served_app
from agent_env.testing import FakeTask, calls, fake_served
from tst.support.frames import NoOpenTurnInstead
from tst.support.serving import Serve
from tst.support.tools import add_crate, jam_crane

pytestmark = pytest.mark.needs("trl_installed")

DEADLINES = Deadlines(reset_timeout_s=30.0, tool_timeout_s=30.0)


def stored(context: VerifierContext) -> float:
    return 1.0 if any(name == "add_crate" for name, _ in calls(context)) else 0.0


SessionOn = Callable[[ASGIApp], SessionClient]
"""The `session_on` fixture's type: an app, served, to an open session on it."""


def dock(**options: Any) -> FakeTask:
    return FakeTask("store", tools=[add_crate, jam_crane], score=stored, **options)


@pytest.fixture
def session_on(serve: Serve) -> Iterator[SessionOn]:
    opened: list[SessionClient] = []

    def on(app: ASGIApp) -> SessionClient:
        session = SessionClient(serve(app).url, connect_timeout_s=10)
        session.open()
        opened.append(session)
        return session

    yield on
    for session in opened:
        session.close()


def test_an_error_that_leaves_the_turn_open_is_the_calls_alone_and_the_episode_goes_on_to_its_score(
    session_on: SessionOn,
) -> None:
    session = session_on(build_served_app(fake_served({"train": [dock()]})))
    episode = ClientEpisode.reset(session, "train", 0, DEADLINES)
    assert episode.deployed() is not None

    jammed = episode.call_tool("jam_crane", {"crate": "C1"})
    assert jammed.error is not None and jammed.turn == 1
    assert episode.ended is None
    assert episode.call_tool("add_crate", {"crate": "C1", "bay": 2}).error is None

    last = episode.end_turn("Stored.")

    assert (episode.done, episode.reward, episode.ended) == (True, 1.0, None)
    assert next_prompt(last) == TASK_OVER


def test_an_error_answer_with_no_open_turn_ends_the_episode_with_the_servers_code(
    session_on: SessionOn,
) -> None:
    app = NoOpenTurnInstead(build_served_app(fake_served({"train": [dock()]})))
    session = session_on(app)
    episode = ClientEpisode.reset(session, "train", 0, DEADLINES)
    episode.deployed()

    answer = episode.call_tool("add_crate", {"crate": "C1", "bay": 2})

    assert (answer.done, answer.turn) == (False, None)
    assert episode.ended is not None and episode.ended.code == "NO_OPEN_TURN"
    assert episode.ended.reason == (
        "the episode ended: NO_OPEN_TURN: no turn is open: the episode ended (failed)"
    )
    assert not episode.done and episode.reward is None


def test_end_turns_answer_is_the_next_turns_user_message_until_the_last_turn(session_on: SessionOn) -> None:
    task = dock(turns=("Store C1.", "Now store C2."))
    session = session_on(build_served_app(fake_served({"train": [task]})))
    episode = ClientEpisode.reset(session, "train", 0, DEADLINES)
    episode.deployed()

    assert next_prompt(episode.end_turn("Done.")) == "Now store C2."
    assert next_prompt(episode.end_turn("Done too.")) == TASK_OVER
    assert episode.done and episode.reward == 0.0
