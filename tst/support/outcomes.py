"""Fake tasks whose samples pass, fail, score partly or are errors as a script says, and the policy
that plays them, for the tests of eval's results (pass rates, means, spreads) and of what they select
(the trainer's datasets)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agent_env._contexts import VerifierContext
from agent_env.eval import END_TURN, AssistantMessage, PolicyError, ToolCall
from agent_env.testing import FakeTask

Outcome = Literal["pass", "fail", "error"] | float
"""A sample as played: "pass" scores 1.0, "fail" 0.0, a number that score (partial credit), and
"error" is no score at all: the model's endpoint failed."""


def scored_by_reply(context: VerifierContext) -> float:
    """1.0 when the agent replied "pass", the number it replied (a partial score), else 0.0."""
    if context.reply == "pass":
        return 1.0
    try:
        return float(context.reply)
    except ValueError:
        return 0.0


def outcome_tasks(ids: Sequence[str]) -> list[FakeTask]:
    """A fake task per id, prompted with its id and scored by the reply (`scored_by_reply`)."""
    return [FakeTask(task_id, turns=(task_id,), score=scored_by_reply) for task_id in ids]


class OutcomePolicy:
    """Plays each task's samples as `outcomes[id]` says, in order: "pass", "fail" and a score reply so
    (and end the turn), "error" raises PolicyError, as an endpoint that failed past its retries."""

    def __init__(self, outcomes: Mapping[str, Sequence[Outcome]]) -> None:
        self._left = {task_id: list(planned) for task_id, planned in outcomes.items()}
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AssistantMessage:
        task_id = next(m["content"] for m in messages if m["role"] == "user")
        with self._lock:
            outcome = self._left[task_id].pop(0)
        if outcome == "error":
            raise PolicyError(f"the endpoint failed for {task_id}")
        reply = str(outcome)
        ending = ToolCall(f"end-{task_id}", END_TURN, json.dumps({"reply": reply}), {"reply": reply})
        return AssistantMessage(tool_calls=(ending,))
