"""Fake tasks whose samples pass, fail or are errors as a script says, and the policy that plays them,
for the tests of pass rates (eval's results) and of what they select (the trainer's datasets)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agent_env.contexts import VerifierContext
from agent_env.eval import END_TURN, AssistantMessage, PolicyError, ToolCall
from agent_env.testing import FakeTask

Outcome = Literal["pass", "fail", "error"]


def scored_by_reply(context: VerifierContext) -> float:
    """1.0 when the agent replied "pass", else 0.0."""
    return 1.0 if context.reply == "pass" else 0.0


def outcome_tasks(ids: Sequence[str]) -> list[FakeTask]:
    """A fake task per id, prompted with its id and scored by the reply (`scored_by_reply`)."""
    return [FakeTask(task_id, turns=(task_id,), score=scored_by_reply) for task_id in ids]


class OutcomePolicy:
    """Plays each task's samples as `outcomes[id]` says, in order: "pass" and "fail" reply so (and
    end the turn), "error" raises PolicyError, as an endpoint that failed past its retries."""

    def __init__(self, outcomes: Mapping[str, Sequence[Outcome]]) -> None:
        self._left = {task_id: list(planned) for task_id, planned in outcomes.items()}
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AssistantMessage:
        task_id = next(m["content"] for m in messages if m["role"] == "user")
        with self._lock:
            outcome = self._left[task_id].pop(0)
        if outcome == "error":
            raise PolicyError(f"the endpoint failed for {task_id}")
        ending = ToolCall(f"end-{task_id}", END_TURN, json.dumps({"reply": outcome}), {"reply": outcome})
        return AssistantMessage(tool_calls=(ending,))
