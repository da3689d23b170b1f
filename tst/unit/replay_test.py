"""Scripted plays: `replay` drives an episode turn by turn and always tears it down."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import agent_env
from agent_env import (
    Episode,
    EpisodeState,
    ReplayResult,
    ScriptedCall,
    ScriptedTurn,
    Solution,
    TurnResult,
    load_solutions,
    replay,
)
from agent_env._contexts import VerifierContext
from agent_env.testing import FakeTask, calls

WHARF = Path(__file__).resolve().parents[2] / "examples" / "wharf"


def weigh(crate: str) -> str:
    """Weigh a crate on the dock's scales.

    Args:
        crate: The crate's label.
    """
    return f"{crate}: 40 kg"


def weighed(context: VerifierContext) -> float:
    return 1.0 if ("weigh", {"crate": "C12"}) in calls(context) else 0.0


def call(tool: str, **arguments: object) -> ScriptedCall:
    return ScriptedCall(tool=tool, arguments=arguments)


def test_play_ends_the_turns_a_script_leaves_open_with_empty_replies_and_tears_down():
    episode = FakeTask(
        "weigh", tools=[weigh], turns=("Weigh C12.", "Log it.", "Sign off."), score=weighed
    ).new_episode()

    result = asyncio.run(replay(episode, [ScriptedTurn(calls=[call("weigh", crate="C12")], reply="40 kg.")]))

    assert result == ReplayResult(
        score=1.0,
        verifier_scores=(1.0,),
        tool_calls=1,
        transcript=[
            "user: Weigh C12.",
            'weigh({"crate": "C12"}) -> C12: 40 kg',
            "assistant: 40 kg.",
            "user: Log it.",
            "assistant: ",
            "user: Sign off.",
            "assistant: ",
        ],
    )
    assert episode.replies == ["40 kg.", "", ""]
    assert episode.state is EpisodeState.TORN_DOWN


def test_play_records_tool_errors_in_the_transcript_and_keeps_going():
    episode = FakeTask("weigh", tools=[weigh], turns=("Weigh C12.",), score=weighed).new_episode()
    calls = [call("paint", colour="red"), call("weigh", crate=12), call("weigh", crate="C12")]

    result = asyncio.run(replay(episode, [ScriptedTurn(calls=calls, reply="Done.")]))

    assert result.transcript[1:4] == [
        'paint({"colour": "red"}) -> error: unknown tool \'paint\' (tools: weigh) (code: UNKNOWN_TOOL)',
        "weigh({\"crate\": 12}) -> error: weigh: argument 'crate': Input should be a valid string (got 12) "
        "(code: INVALID_ARGUMENTS)",
        'weigh({"crate": "C12"}) -> C12: 40 kg',
    ]
    assert (result.score, result.error, result.tool_calls) == (1.0, None, 3)
    assert result.failed_call == (
        'paint({"colour": "red"}): unknown tool \'paint\' (tools: weigh) (code: UNKNOWN_TOOL)'
    )


def test_play_makes_the_calls_of_a_step_of_several_in_order_with_the_steps_around_it():
    episode = FakeTask("weigh", tools=[weigh], turns=("Weigh C12.",), score=weighed).new_episode()
    turn = ScriptedTurn.model_validate(
        {
            "calls": [
                {"tool": "weigh", "arguments": {"crate": "C11"}},
                [
                    {"tool": "weigh", "arguments": {"crate": "C12"}},
                    {"tool": "weigh", "arguments": {"crate": "C13"}},
                ],
            ],
            "reply": "Weighed.",
        }
    )

    result = asyncio.run(replay(episode, [turn]))

    assert (result.score, result.tool_calls) == (1.0, 3)
    assert result.transcript[1:4] == [
        'weigh({"crate": "C11"}) -> C11: 40 kg',
        'weigh({"crate": "C12"}) -> C12: 40 kg',
        'weigh({"crate": "C13"}) -> C13: 40 kg',
    ]


def test_play_returns_the_error_when_deploy_fails_and_still_tears_down():
    episode = FakeTask("stuck", deploy_error=RuntimeError("no berth free")).new_episode()

    result = asyncio.run(replay(episode, [ScriptedTurn(reply="Done.")]))

    assert result == ReplayResult(
        error="deploy of task 'stuck' failed: RuntimeError: no berth free (code: DEPLOY_FAILED)"
    )
    assert episode.state is EpisodeState.TORN_DOWN


class BrokenScales(Episode):
    """An episode whose turn's end raises what an Episode never does."""

    async def end_turn(self, reply: str) -> TurnResult:
        raise RuntimeError("the scales are broken")


def test_play_tears_down_even_when_a_step_raises_something_other_than_an_episode_error():
    episode = BrokenScales(FakeTask("weigh", tools=[weigh]).task_at("train", 0))

    with pytest.raises(RuntimeError, match="the scales are broken"):
        asyncio.run(replay(episode, []))

    assert episode.state is EpisodeState.TORN_DOWN


def test_load_solutions_gives_the_example_s_reference_plays_by_task_id():
    bundle = agent_env.load_bundle(WHARF)

    solutions = load_solutions(bundle, "train")

    assert list(solutions) == [task.id for task in bundle.tasks("train")]
    assert solutions["store-then-move-000"] == Solution(
        id="store-then-move-000",
        turns=[
            ScriptedTurn(calls=[call("add_crate", crate="C16", bay=2, kind="dry")], reply="Stored."),
            ScriptedTurn(calls=[call("move_crate", crate="C16", to_bay=6)], reply="Moved."),
        ],
        expected_score=1.0,
    )


def test_load_solutions_is_empty_for_a_split_without_a_solutions_file():
    bundle = agent_env.load_bundle(WHARF)

    assert load_solutions(bundle, "holdout") == {}
