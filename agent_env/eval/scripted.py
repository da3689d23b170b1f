"""A policy that plays a script: a task's reference play (`Solution`), turn by turn, over the wire.

In each turn it first answers with all of the turn's tool calls (a script writes them before it sees
any result, as a model does that calls several tools in one answer), then, once their results are
in, ends the turn with `end_turn` and the turn's reply. What the tools answer is the server's:
`play_sample` plays a script as it plays any policy.
"""

from __future__ import annotations

import json
from typing import Any

from agent_env.client.tools import END_TURN
from agent_env.eval.policy import AssistantMessage, Message, PolicyError, ToolCall
from agent_env.specs import Solution


class ScriptedPolicy:
    """Answers as `script` says: per turn, its calls in one answer, then `end_turn` with its reply.

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
        if turn.calls:
            calls = tuple(
                ToolCall(f"call_{turn_number}_{n}", c.tool, json.dumps(c.arguments), dict(c.arguments))
                for n, c in enumerate(turn.calls, start=1)
            )
            answers.append(AssistantMessage(tool_calls=calls))
        reply = json.dumps({"reply": turn.reply})
        ending = ToolCall(f"call_{turn_number}_end", END_TURN, reply, {"reply": turn.reply})
        answers.append(AssistantMessage(tool_calls=(ending,)))
    return answers
