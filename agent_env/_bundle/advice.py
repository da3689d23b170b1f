"""What `agent-env check` advises beyond errors: tasks that load and play, but may not score as their
writer means.

A turn's reply is what the model passes to `end_turn`, in eval and in both TRL trainers alike: TRL's
tool loop stops at an answer without a tool call, so a last answer in plain text reaches no
verifier. A task scored on its reply should tell the model so; one whose prompts never name
`end_turn` is named here.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_env._task import Task
from agent_env._verifiers import ReplyCheck

_NAMED = 5


def reply_advice(tasks: Iterable[Task]) -> str | None:
    """A note naming the tasks scored on their reply whose prompts never mention `end_turn`; None if none."""
    silent = [
        task
        for task in tasks
        if any(isinstance(verifier.spec, ReplyCheck) for verifier in task.verifiers)
        and not any("end_turn" in (text or "") for text in (task.agent.system_prompt, *task.turns))
    ]
    if not silent:
        return None
    named = ", ".join(f"{task.split}/{task.id}" for task in silent[:_NAMED])
    more = f" and {len(silent) - _NAMED} more" if len(silent) > _NAMED else ""
    return (
        f"{len(silent)} tasks are scored on their reply but never tell the model how to give one "
        f"({named}{more}): a turn's reply is what the model passes to end_turn, in eval and training "
        "alike, and a last answer in plain text is no reply. Say so in the agent's system_prompt, "
        "e.g. 'Give your answer with end_turn(reply=...)'."
    )
