"""`ScriptedPolicy`: a reference play answered step by step, over a real server on loopback."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent_env import Solution
from agent_env.eval import AssistantMessage, Message, ScriptedPolicy, play_sample
from agent_env.testing import FakeTask
from tst.support.serving import Serve
from tst.support.tools import add_crate, list_crates

pytestmark = pytest.mark.needs("eval_installed")

LIST_THEN_STORE_TWO = Solution.model_validate(
    {
        "id": "store",
        "turns": [
            {
                "calls": [
                    {"tool": "list_crates"},
                    [
                        {"tool": "add_crate", "arguments": {"crate": "C2", "bay": 3}},
                        {"tool": "add_crate", "arguments": {"crate": "C3", "bay": 4}},
                    ],
                ],
                "reply": "Stored C2 and C3.",
            }
        ],
    }
)


class Watched:
    """A policy seen from outside: what it was handed and what it answered, at each answer."""

    def __init__(self, policy: ScriptedPolicy) -> None:
        self.policy = policy
        self.seen: list[tuple[list[Message], AssistantMessage]] = []

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> AssistantMessage:
        answer = self.policy(messages, tools)
        self.seen.append((copy.deepcopy(messages), answer))
        return answer


def test_each_step_is_an_answer_of_its_own_made_once_the_previous_steps_results_are_in(serve: Serve) -> None:
    task = FakeTask("store", tools=[add_crate, list_crates])
    url = serve({"train": [task]}).url
    watched = Watched(ScriptedPolicy(LIST_THEN_STORE_TWO))

    played = play_sample(url, task.spec("train", 0), watched, model=None)

    assert played.outcome.kind == "scored"
    answers = [[(call.name, call.arguments) for call in answer.tool_calls] for _, answer in watched.seen]
    assert answers == [
        [("list_crates", {})],
        [("add_crate", {"crate": "C2", "bay": 3}), ("add_crate", {"crate": "C3", "bay": 4})],
        [("end_turn", {"reply": "Stored C2 and C3."})],
    ]
    results = [[m["content"] for m in messages if m["role"] == "tool"] for messages, _ in watched.seen]
    assert results == [
        [],
        ["C1 in bay 2"],
        ["C1 in bay 2", "stored dry crate C2 in bay 3", "stored dry crate C3 in bay 4"],
    ]
    ids = [call.id for _, answer in watched.seen for call in answer.tool_calls]
    assert len(set(ids)) == len(ids), "a call's id is its own within the conversation"
