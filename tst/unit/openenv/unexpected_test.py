"""What the server does with what should not happen: an episode that raises, a reset during shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from agent_env._episode import Episode, EpisodeState
from agent_env._served import ServedTask
from agent_env.openenv import AgentEnvAction, build_served_app
from agent_env.openenv._context import ServerContext
from agent_env.openenv._episode_session import EpisodeSession
from agent_env.testing import FakeTask, fake_served
from tst.support.serving import Connect, Serve
from tst.support.tools import add_crate

pytestmark = pytest.mark.needs("openenv_installed")


class BrokenEpisode(Episode):
    """An episode whose tool call fails in a way an Episode never does."""

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        raise KeyError(name)


def test_an_episode_that_raises_something_unexpected_ends_with_an_internal_error_and_is_torn_down(
    serve: Serve, connect: Connect
) -> None:
    task = FakeTask("broken").task_at("train", 0)
    broken: list[Episode] = []

    def new_episode() -> Episode:
        broken.append(BrokenEpisode(task))
        return broken[-1]

    served = {"train": (ServedTask(task.spec, new_episode),)}
    client = connect(serve(build_served_app(served)).url, message_timeout_s=10)
    client.reset(split="train", index=0)

    answer = client.step(AgentEnvAction.call_tool("lift").wire())
    again = client.reset(split="train", index=0)

    assert answer.observation["error"]["code"] == "INTERNAL_ERROR"
    assert answer.observation["error"]["message"] == "call_tool lift: KeyError: 'lift'"
    assert answer.done is True
    assert broken[0].state is EpisodeState.TORN_DOWN
    assert again.observation["error"] is None


def test_a_reset_that_comes_while_the_server_shuts_down_starts_no_episode() -> None:
    task = FakeTask("late", tools=[add_crate])
    context = ServerContext("dock", fake_served({"train": [task]}))

    async def reset_during_shutdown() -> dict[str, Any]:
        await context.shut_down()
        answer = await EpisodeSession(context).reset({"split": "train", "index": 0})
        return answer.model_dump()

    answer = asyncio.run(reset_during_shutdown())

    assert answer["error"]["code"] == "SHUTTING_DOWN"
    assert task.episodes == []
