"""Demonstrations: a split's reference plays, played on the server, as a dataset for TRL's SFTTrainer.

A row is, message for message, the conversation TRL's tool loop builds for a GRPO rollout through
the factory that plays the same: the reset's prompt; then, per turn, per step (one answer of the
model), an assistant message with the step's tool calls (TRL's shape: `content` "", `arguments` an
object, no ids) and a `tool` message per call with what the server answered (a failed call's error
worded as TRL words a tool's exception), the next step seeing those results; then an `end_turn`
call, an answer of its own, with the turn's reply, answered by the next turn's prompt or, after the
last turn, by `TASK_OVER`; then an empty assistant message, where the model stops. The steps are
the trajectory's (`ToolCallRecord.step`): a call whose step is unknown, as in a server's
recording, is a step of its own, and `end_turn` is always one (a model that made it together with
other calls is shown making it after them). The plays run over the wire, by eval's player with a
`ScriptedPolicy`, so every result is the server's, never the script's; a play that no longer
scores its `expected_score` is left out and reported. Recorded successes (`_successes.py`) become
rows by the same builder, `dataset_of_plays`.

The conversational columns are stored as JSON (datasets' `Json` feature): Arrow would otherwise
merge the `arguments` of every call into one struct, and the keys a tool lacks would come back as
nulls that the chat template renders into its calls.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_env._specs import SolutionSpec, TaskSpec
from agent_env.client._tools import END_TURN, TASK_OVER
from agent_env.training.trl._errors import DemonstrationError, DemonstrationWarning

if TYPE_CHECKING:
    from datasets import Dataset, Features

    from agent_env._trajectory import ToolCallRecord, Trajectory
    from agent_env.client._taskapi import TaskAPI
    from agent_env.eval._play import PlaySettings

Offered = Callable[[Iterable[TaskSpec]], Mapping[str, Sequence[Mapping[str, Any]]]]
"""The tools of each of the tasks' toolsets, as GRPOTrainer shows them (`toolsets.offered`)."""

MAX_PLAYS_AT_ONCE = 8
"""Reference plays played at once (fewer when the server holds fewer sessions)."""


@dataclass(frozen=True)
class Played:
    """One reference play as the server played it."""

    task: TaskSpec
    solution: SolutionSpec
    trajectory: Trajectory

    @property
    def failure(self) -> str | None:
        """What went wrong, naming the task; None when it scored what its script expects."""
        where = f"{self.task.id} ({self.task.split}/{self.task.index})"
        outcome = self.trajectory.outcome
        if outcome.kind != "scored" or self.trajectory.score is None:
            return f"{where}: {outcome.kind}" + "".join(
                f": {part}" for part in (outcome.code, outcome.reason) if part
            )
        expected = self.solution.script.expected_score
        if not math.isclose(self.trajectory.score, expected, abs_tol=1e-9):
            return f"{where}: scored {self.trajectory.score:g}, expected {expected:g}"
        return None


def features() -> Features:
    """The dataset's columns: each message and each tool schema kept as the JSON it was built as."""
    from datasets import Features, Json, List, Value

    return Features(
        {
            "messages": List(Json()),
            "tools": List(Json()),
            "split": Value("string"),
            "index": Value("int64"),
            "id": Value("string"),
        }
    )


def harbor_tasks(tasks: Iterable[TaskSpec]) -> bool:
    """Whether these are Harbor tasks, whose reference plays are their folders' solution/solve.sh,
    not a bundle's solutions/SPLIT.jsonl: tasks scored by their own test script (only Harbor's
    loader makes a `test_script` verifier)."""
    return any(verifier.type == "test_script" for task in tasks for verifier in task.verifiers)


def no_solutions(split: str, url: str, tasks: Iterable[TaskSpec] = ()) -> DemonstrationError:
    replay = f"(`agent-env replay BUNDLE --split {split}` plays them and prints their scores)"
    if harbor_tasks(tasks):
        return DemonstrationError(
            f"split '{split}' on {url} has no reference plays: add solution/solve.sh to its Harbor task "
            "folders, a script that does the task (each is played as one bash call, and its "
            f"tests/test.sh scores the play) {replay}"
        )
    return DemonstrationError(
        f"split '{split}' on {url} has no reference plays: add solutions/{split}.jsonl to its bundle, "
        'one task\'s play per line, as {"id": TASK_ID, "turns": [{"calls": [{"tool": NAME, '
        '"arguments": {...}}], "reply": TEXT}, ...]} with one entry per turn of the task '
        f"{replay}"
    )


def reference_demonstrations(
    api: TaskAPI,
    split: str,
    tasks: Sequence[TaskSpec],
    offered: Offered,
    *,
    reset_timeout_s: float,
    tool_timeout_s: float,
    connect_timeout_s: float,
    token: str | None,
    strict: bool,
) -> Dataset:
    """`AgentEnv.demonstrations`: the split's reference plays, each played on `api`'s server now with
    these deadlines, as rows; a split without solutions is a `DemonstrationError`."""
    from agent_env.eval._play import PlaySettings

    by_index = {task.index: task for task in tasks}
    solutions = api.solutions(split)
    if not solutions:
        raise no_solutions(split, api.url, by_index.values())
    tools = offered(by_index[solution.index] for solution in solutions)
    settings = PlaySettings(
        max_tool_calls=None,  # a reference play is a finite script: every call of it is played
        reset_timeout_s=reset_timeout_s,
        tool_timeout_s=tool_timeout_s,
        connect_timeout_s=connect_timeout_s,
    )
    played = play_solutions(
        api.url, by_index, solutions, settings, token=token, sessions=api.max_concurrent_envs
    )
    return dataset_of(split, played, tools, strict=strict)


def play_solutions(
    url: str,
    tasks: Mapping[int, TaskSpec],
    solutions: Sequence[SolutionSpec],
    settings: PlaySettings,
    *,
    token: str | None,
    sessions: int,
) -> list[Played]:
    """Play each solution on a session of its own, a few at once; in the solutions' order."""
    from agent_env.eval._play import play_sample
    from agent_env.eval._scripted import ScriptedPolicy

    def play(solution: SolutionSpec) -> Played:
        task = tasks[solution.index]
        policy = ScriptedPolicy(solution.script)
        trajectory = play_sample(url, task, policy, model=None, settings=settings, token=token)
        return Played(task, solution, trajectory)

    with ThreadPoolExecutor(max(1, min(MAX_PLAYS_AT_ONCE, sessions, len(solutions)))) as pool:
        return list(pool.map(play, solutions))


def dataset_of(
    split: str, played: Sequence[Played], tools: Mapping[str, Sequence[Mapping[str, Any]]], *, strict: bool
) -> Dataset:
    """The rows of the plays that scored as expected; the others are reported (a warning, or with
    `strict` an error), each by name. `tools` are each toolset's schemas, `end_turn`'s included."""
    failures = tuple(failure for play in played if (failure := play.failure) is not None)
    if failures:
        harbor = harbor_tasks(play.task for play in played)
        expected = (
            "(their task folders' solution/solve.sh) no longer score what they should"
            if harbor
            else f"no longer score what solutions/{split}.jsonl expects"
        )
        what = (
            f"{len(failures)} of {len(played)} reference plays of split '{split}' {expected}:\n  "
            + "\n  ".join(failures)
            + "\n"
        )
        solution = "solution/solve.sh" if harbor else "solution"
        fix = f"fix each task or its {solution} (`agent-env replay BUNDLE --split {split}` replays them)"
        if strict:
            raise DemonstrationError(f"{what}Fix: {fix}.", failures)
        warnings.warn(
            f"{what}They are left out of the demonstrations: {fix}, or pass strict=True to make this "
            "an error.",
            DemonstrationWarning,
            stacklevel=4,  # the caller of AgentEnv.demonstrations
        )
    return dataset_of_plays(((play.task, play.trajectory) for play in played if play.failure is None), tools)


def dataset_of_plays(
    plays: Iterable[tuple[TaskSpec, Trajectory]], tools: Mapping[str, Sequence[Mapping[str, Any]]]
) -> Dataset:
    """A row per play of a task, as `features()` says: the one row builder, for reference plays and
    recorded trajectories (`_successes.py`) alike. `tools` are each toolset's schemas, `end_turn`'s
    included."""
    from datasets import Dataset

    rows = [
        {
            "messages": messages_of(task.prompt, trajectory),
            "tools": [dict(tool) for tool in tools[task.toolset.name]],
            "split": task.split,
            "index": task.index,
            "id": task.id,
        }
        for task, trajectory in plays
    ]
    return Dataset.from_list(rows, features=features())


def messages_of(prompt: Sequence[Mapping[str, str]], trajectory: Trajectory) -> list[dict[str, Any]]:
    """The conversation of a played task, as TRL's tool-calling loop builds a rollout's."""
    messages: list[dict[str, Any]] = [dict(message) for message in prompt]
    turns = trajectory.turns
    for number, turn in enumerate(turns):
        for step in turn.steps:
            messages.append(_calling([(call.tool, call.arguments) for call in step]))
            messages.extend(_answer(call.tool, _result(call)) for call in step)
        messages.append(_calling([(END_TURN, {"reply": turn.reply or ""})]))
        following = turns[number + 1].prompt if number + 1 < len(turns) else TASK_OVER
        messages.append(_answer(END_TURN, following))
    # The task is over: the model's next answer is read by no one, so it learns to end at once.
    messages.append({"role": "assistant", "content": ""})
    return messages


def _calling(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": name, "arguments": dict(arguments)}}
            for name, arguments in calls
        ],
    }


def _answer(name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "name": name, "content": content}


def _result(call: ToolCallRecord) -> str:
    """What the model saw: the result, or the error as TRL words a tool's exception (the trainer's
    tools raise `ToolCallError` with the server's message)."""
    if call.error is not None:
        return str({"error": call.error})
    return call.result or ""
