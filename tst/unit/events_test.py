"""An episode owns its lifecycle: its state, open turn and outcome, and the events it emits in order."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from typing import Any

import pytest

from agent_env import (
    Deployed,
    Episode,
    EpisodeError,
    EpisodeEvent,
    EpisodeOutcome,
    EpisodeState,
    Failed,
    Scored,
    ToolAnswered,
    ToolCalled,
    TornDown,
    TurnEnded,
    VerifierContext,
)
from agent_env._verifiers import FunctionCheck, Verifier
from tst.support.wharf import example


def kinds(events: list[EpisodeEvent]) -> list[str]:
    return [event.kind for event in events]


def test_a_played_episode_emits_each_step_in_order_with_what_it_carried_and_the_last_event_is_torn_down():
    task = example("store-then-move-000")
    heard: list[EpisodeEvent] = []
    episode = Episode(task, listeners=[heard.append])

    async def main() -> None:
        await episode.deploy()
        await episode.call_tool("add_crate", {"crate": "C16", "bay": 2, "kind": "dry"})
        await episode.end_turn("Stored.")
        await episode.call_tool("move_crate", {"crate": "C16", "to_bay": 6})
        await episode.end_turn("Moved.")
        await episode.teardown()

    asyncio.run(main())

    assert heard == episode.events
    assert kinds(heard) == [
        "deployed",
        "tool_called",
        "tool_answered",
        "turn_ended",
        "tool_called",
        "tool_answered",
        "turn_ended",
        "scored",
        "torn_down",
    ]
    deployed, called, answered, first_end = heard[:4]
    assert deployed == Deployed(
        at=deployed.at, prompt=task.prompt, tools=task.toolset.tools, seconds=deployed.seconds
    )
    assert called == ToolCalled(
        at=called.at, turn=1, tool="add_crate", arguments={"crate": "C16", "bay": 2, "kind": "dry"}
    )
    assert answered == ToolAnswered(
        at=answered.at,
        turn=1,
        tool="add_crate",
        result="crate C16 (dry) stored in bay 2",
        seconds=answered.seconds,
    )
    assert first_end == TurnEnded(at=first_end.at, turn=1, reply="Stored.", prompt=task.turns[1])
    assert heard[6] == TurnEnded(at=heard[6].at, turn=2, reply="Moved.", prompt=None)
    assert heard[7] == Scored(at=heard[7].at, score=1.0, verifier_scores=(1.0,))
    assert heard[8] == TornDown(at=heard[8].at, outcome="scored 1", seconds=heard[8].seconds)
    assert [event.at for event in heard] == sorted(event.at for event in heard)
    assert (episode.state, episode.outcome, episode.score) == (
        EpisodeState.TORN_DOWN,
        EpisodeOutcome("scored", score=1.0, at=episode.outcome.at if episode.outcome else 0),
        1.0,
    )


def test_every_event_is_json_ready_data_with_its_kind_first():
    episode = Episode(example("store-crate-000"))

    async def main() -> None:
        await episode.deploy()
        await episode.call_tool("add_crate", {"crate": "C1", "bay": 2, "kind": "dry"})
        await episode.teardown()

    asyncio.run(main())

    dumped = [json.loads(json.dumps(event.as_dict())) for event in episode.events]
    assert [next(iter(event)) for event in dumped] == ["kind"] * len(dumped)
    assert dumped[1] == {
        "kind": "tool_called",
        "at": episode.events[1].at,
        "turn": 1,
        "tool": "add_crate",
        "arguments": {"crate": "C1", "bay": 2, "kind": "dry"},
    }


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("paint_crate", {}, "UNKNOWN_TOOL"),
        ("add_crate", {"crate": "C1"}, "INVALID_ARGUMENTS"),
    ],
)
def test_a_refused_tool_call_is_in_the_events_answered_with_its_error_and_the_turn_stays_open(
    tool: str, arguments: dict[str, Any], code: str
):
    episode = Episode(example("store-crate-000"))

    async def main() -> None:
        await episode.deploy()
        with pytest.raises(EpisodeError):
            await episode.call_tool(tool, arguments)

    asyncio.run(main())

    called, answered = episode.events[1:]
    assert (called.kind, answered.kind) == ("tool_called", "tool_answered")
    assert isinstance(answered, ToolAnswered)
    assert (answered.result, answered.error_code) == (None, code)
    assert answered.error and tool in answered.error
    assert (episode.state, episode.open_turn) == (EpisodeState.TURN_OPEN, 1)


def test_the_verifiers_see_the_episode_s_events_up_to_the_last_turn_s_end():
    seen: list[list[str]] = []

    def called_add_crate(context: VerifierContext) -> float:
        seen.append(kinds(list(context.events)))
        return (
            1.0 if any(isinstance(e, ToolCalled) and e.tool == "add_crate" for e in context.events) else 0.0
        )

    verifier = Verifier(FunctionCheck(type="function", function="called_add_crate"), called_add_crate)
    episode = Episode(dataclasses.replace(example("store-crate-000"), verifiers=(verifier,)))

    async def main() -> float | None:
        await episode.deploy()
        await episode.call_tool("add_crate", {"crate": "C1", "bay": 2, "kind": "dry"})
        return (await episode.end_turn("Stored.")).score

    assert asyncio.run(main()) == 1.0
    assert seen == [["deployed", "tool_called", "tool_answered", "turn_ended"]]


def test_an_episode_failed_from_outside_emits_failed_once_and_keeps_its_first_ending():
    episode = Episode(example("store-crate-000"))
    asyncio.run(episode.deploy())

    episode.fail(EpisodeError("DEADLINE_EXCEEDED", "end_turn missed its deadline of 1 s"))
    episode.fail(EpisodeError("CLIENT_GONE", "the client disconnected"))
    episode.abandon("the session closed")

    assert [e for e in episode.events if isinstance(e, Failed)] == [
        Failed(
            at=episode.events[-1].at, code="DEADLINE_EXCEEDED", message="end_turn missed its deadline of 1 s"
        )
    ]
    assert episode.state is EpisodeState.FAILED and episode.open_turn is None
    assert str(episode.outcome) == "failed DEADLINE_EXCEEDED: end_turn missed its deadline of 1 s"
    assert episode.error is not None and episode.error.code == "DEADLINE_EXCEEDED"


def test_an_episode_given_up_unfinished_is_abandoned_for_the_reason_given_and_refuses_calls_saying_so():
    episode = Episode(example("store-crate-000"))
    asyncio.run(episode.deploy())

    episode.abandon("the session reset")
    asyncio.run(episode.teardown())

    assert str(episode.outcome) == "abandoned: the session reset"
    last = episode.events[-1]
    assert last == TornDown(at=last.at, outcome="abandoned: the session reset", seconds=last.seconds)
    with pytest.raises(EpisodeError, match=r"ended \(abandoned: the session reset\)") as refused:
        episode.require_open_turn()
    assert refused.value.code == "NO_OPEN_TURN"


def test_a_listener_that_raises_is_logged_and_the_episode_plays_on(caplog: pytest.LogCaptureFixture):
    def broken(event: EpisodeEvent) -> None:
        raise RuntimeError("the recorder is full")

    episode = Episode(example("store-crate-000"), listeners=[broken])
    with caplog.at_level(logging.ERROR, logger="agent_env._episode"):
        prompt = asyncio.run(episode.deploy())

    assert prompt == example("store-crate-000").turns[0]
    assert episode.state is EpisodeState.TURN_OPEN
    assert "a listener of an episode of task 'store-crate-000' raised on deployed" in caplog.text
