"""A policy that plays a script: a task's reference play (`Solution`), step by step, over the wire.

Each step of a turn is one answer: its calls, made together (a step of one call is the common case,
a call that needs the previous one's result); the next step is answered once the results are in, in
the conversation the policy is handed, as a model sees them. Once the turn's steps are played, it
ends the turn with `end_turn` and the turn's reply, an answer of its own. What the tools answer is
the server's: `play_sample` plays a script as it plays any policy. `ReferencePolicy` plays each task's
reference play, a `ScriptedPolicy` per sample, so that a bundle's eval can be tried before any model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_env._specs import Solution, TaskSpec
from agent_env.client._tools import END_TURN
from agent_env.eval._policy import AssistantMessage, Message, PolicyError, ToolCall


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


class ReferencePolicy:
    """Plays each task's reference play, `solutions` by task id (`load_solutions(bundle, split)`):
    `evaluate` gets a fresh `ScriptedPolicy` per sample, and leaves out a task without one, which
    `left_out` then names."""

    def __init__(self, solutions: Mapping[str, Solution]) -> None:
        self.solutions = dict(solutions)
        self.left_out: list[str] = []
        """The ids of the tasks asked for that have no reference play, each once, in the order asked."""

    def for_task(self, task: TaskSpec) -> ScriptedPolicy | None:
        script = self.solutions.get(task.id)
        if script is None and task.id not in self.left_out:
            self.left_out.append(task.id)
        return None if script is None else ScriptedPolicy(script)


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
