"""A policy that plays a script: a task's reference play (`Solution`), step by step, over the wire.

Each step of a turn is one answer: its calls, made together (a step of one call is the common case,
a call that needs the previous one's result); the next step is answered once the results are in, in
the conversation the policy is handed, as a model sees them. Once the turn's steps are played, it
ends the turn with `end_turn` and the turn's reply, an answer of its own. What the tools answer is
the server's: `play_sample` plays a script as it plays any policy.
"""

from __future__ import annotations

import json
from typing import Any

from agent_env.client.tools import END_TURN
from agent_env.eval.policy import AssistantMessage, Message, PolicyError, ToolCall
from agent_env.specs import Solution


class ScriptedPolicy:
    """Answers as `script` says: per turn, each step's calls in an answer of their own, then
    `end_turn` with the turn's reply.

    One instance plays one sample (it keeps its place in the script); make one per play.
    """

    def __init__(self, script: Solution) -> None:
        self.script = script
        self._answers = iter(_answers(script))

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> AssistantMessage:
        answer = next(self._answers, None)
        if answer is None:
            raise PolicyError(
                f"the script of task '{self.script.id}' has {len(self.script.turns)} turns and the task "
                "asked for another: write one turn per turn of the task"
            )
        return answer


def _answers(script: Solution) -> list[AssistantMessage]:
    answers = []
    for turn_number, turn in enumerate(script.turns, start=1):
        ids = (f"call_{turn_number}_{n}" for n in range(1, len(turn.all_calls) + 1))
        for step in turn.steps:
            calls = tuple(ToolCall(next(ids), c.tool, json.dumps(c.arguments), c.arguments) for c in step)
            answers.append(AssistantMessage(tool_calls=calls))
        reply = json.dumps({"reply": turn.reply})
        ending = ToolCall(f"call_{turn_number}_end", END_TURN, reply, {"reply": turn.reply})
        answers.append(AssistantMessage(tool_calls=(ending,)))
    return answers
