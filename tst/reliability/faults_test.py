"""Faults: what hangs forever or raises never holds a teardown, a session or a shutdown past its bound.

A training run plays hundreds of thousands of episodes; one teardown that never ends would hold its
session's next reset, and the server's shutdown, forever. Each bound is shortened here so the tests
stay quick; the defaults are `RELEASE_TIMEOUT_S` (30 s a step) and `TEARDOWN_TIMEOUT_S` (120 s).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_env import Episode, EpisodeError, _episode as episode_module
from agent_env._env import Env, EnvDefinition
from agent_env._episode import EpisodeState
from agent_env.openenv import BackgroundServer, _tracker as tracker_module, build_served_app
from agent_env.sandbox import LocalSandboxProvider
from agent_env.testing import FakeTask, Gate, fake_served
from tst.reliability._raw import Raw, dock, observation, play_on, status
from tst.support.waiting import until
from tst.support.wharf import example, with_envs

BOUND_S = 0.5
STOP_S = 15.0


@pytest.fixture
def never() -> Iterator[threading.Event]:
    """What hangs waits on this until the test is over, so no thread outlives the test for long."""
    event = threading.Event()
    yield event
    event.set()


def hanging_env(name: str, never: threading.Event, *, in_setup: bool = False) -> EnvDefinition:
    """An env, without tools, whose setup or close never returns (until the test ends)."""

    class Hanging(Env):
        def setup(self, seed: Mapping[str, Any]) -> None:
            if in_setup:
                never.wait()

        def close(self) -> None:
            never.wait()

    return EnvDefinition(name=name, cls=Hanging, tools=())


def test_an_env_whose_close_never_returns_is_given_up_on_and_the_sandbox_is_still_removed(
    tmp_path: Path, never: threading.Event, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(episode_module, "RELEASE_TIMEOUT_S", BOUND_S)
    task = with_envs(example("manifest-total-000"), hanging_env("stuck", never))
    episode = Episode(task, provider=LocalSandboxProvider(tmp_path))

    async def main() -> tuple[Path, float]:
        await episode.deploy()
        assert episode.sandbox is not None
        started = time.monotonic()
        await episode.teardown()
        return Path(episode.sandbox.root), time.monotonic() - started  # type: ignore[attr-defined]

    with caplog.at_level(logging.ERROR, logger="agent_env._episode"):
        root, took = asyncio.run(main())

    assert not root.exists()
    assert took < BOUND_S + 5
    assert any("closing env 'stuck' took over 0.5 s; given up on" in r.getMessage() for r in caplog.records)


def test_a_deploy_that_never_returns_is_cut_by_its_deadline_and_its_teardown_still_ends(
    tmp_path: Path, never: threading.Event, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(episode_module, "RELEASE_TIMEOUT_S", BOUND_S)
    task = with_envs(example("manifest-total-000"), hanging_env("frozen", never, in_setup=True))
    episode = Episode(task, provider=LocalSandboxProvider(tmp_path))

    async def main() -> float:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(BOUND_S):
                await episode.deploy()
        started = time.monotonic()
        await episode.teardown()
        return time.monotonic() - started

    with caplog.at_level(logging.ERROR, logger="agent_env._episode"):
        took = asyncio.run(main())

    assert took < BOUND_S + 5
    assert list(tmp_path.iterdir()) == []  # the sandbox comes after the envs: none was made
    assert any("making an env instance took over" in r.getMessage() for r in caplog.records)
    with pytest.raises(EpisodeError):
        asyncio.run(episode.call_tool("list_crates", {}))


def test_a_teardown_that_never_ends_holds_neither_the_sessions_next_reset_nor_the_shutdown(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tracker_module, "TEARDOWN_TIMEOUT_S", BOUND_S)
    stuck = Gate()
    tasks = [dock("stuck", teardown_gate=stuck), dock("next")]
    server = BackgroundServer(build_served_app(fake_served({"train": tasks}))).start()
    try:
        raw = Raw(server.url)
        observation(raw.ask("reset", {"split": "train", "index": 0}))
        with caplog.at_level(logging.ERROR, logger="agent_env.openenv"):
            restarted = observation(raw.ask("reset", {"split": "train", "index": 1}))
            scored = play_on(raw)
        observation(raw.ask("reset", {"split": "train", "index": 0}))  # stuck again, at shutdown
        assert until(lambda: status(server)["live_episodes"] == 1)
    finally:
        stopping = threading.Thread(target=server.stop)
        started = time.monotonic()
        stopping.start()
        stopping.join(STOP_S)
        stuck.release()

    assert restarted["observation"]["task_id"] == "next"
    assert (scored["done"], scored["reward"]) == (True, 1.0)
    assert not stopping.is_alive(), "the server's shutdown waited on a teardown that never ends"
    assert time.monotonic() - started < STOP_S
    assert any("took over 0.5 s: given up on" in r.getMessage() for r in caplog.records)


def test_a_tool_that_raises_or_hangs_ends_as_an_error_and_the_next_episode_plays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def weigh(crate: str) -> str:
        """Weigh a crate.

        Args:
            crate: The crate's label.
        """
        raise ValueError(f"the scale is broken under {crate}")

    hung = Gate()
    tasks = [FakeTask("weigh", tools=[weigh]), dock("hang", tool_gates={"add_crate": hung})]
    server = BackgroundServer(build_served_app(fake_served({"train": tasks}))).start()
    try:
        raw = Raw(server.url)
        observation(raw.ask("reset", {"split": "train", "index": 0}))
        raised = observation(
            raw.ask("step", {"kind": "call_tool", "tool": "weigh", "arguments": {"crate": "C1"}})
        )
        observation(raw.ask("reset", {"split": "train", "index": 1}))
        call = {"kind": "call_tool", "tool": "add_crate", "arguments": {"crate": "C1", "bay": 2}}
        raw.send(json.dumps({"type": "step", "data": {**call, "metadata": {"timeout_s": BOUND_S}}}))
        missed = observation(raw.answer())
        observation(raw.ask("reset", {"split": "train", "index": 0}))
        raw.close()
        assert until(lambda: status(server)["live_episodes"] == 0)
    finally:
        hung.release()
        server.stop()

    assert raised["observation"]["error"]["code"] == "TOOL_ERROR"
    assert "the scale is broken under C1" in raised["observation"]["error"]["message"]
    assert raised["done"] is False
    assert missed["observation"]["error"]["code"] == "DEADLINE_EXCEEDED" and missed["done"] is True
    assert tasks[1].episodes[0].state is EpisodeState.TORN_DOWN
