"""The online curricula a server holds: one per training run and split, made at the run's first draw.

A trainer asks `POST /{env_name}/curriculum/draw` for each GRPO group's task (every rollout of the
group asks with the group's key and gets the same task), and tells each rollout's score with
`POST /{env_name}/curriculum/scores`; `GET` and `PUT /{env_name}/curriculum/{run}` read and restore a
run's state (a checkpoint's). The policy is `agent_env._curriculum`'s; this module keeps the runs
(the most recent `MAX_RUNS`) and answers for them. Every server of a fleet could hold one; a run
uses its fleet's first server's alone, so every process and server of the run draws from one state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_env._curriculum import Curriculum, CurriculumPolicy
from agent_env._errors import ArgumentError
from agent_env._served import ServedTask
from agent_env._specs import CurriculumDraw, CurriculumDrawn, CurriculumScore

MAX_RUNS = 8
"""Runs whose curricula a server keeps: a run older than the last eight started is forgotten."""


class CurriculumRefusedError(ArgumentError):
    """A curriculum request the server cannot carry out: `status` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Run:
    policy: CurriculumPolicy
    seed: int
    splits: dict[str, Curriculum]


class Curricula:
    """The curricula of the runs that drew from this server, over the tasks it serves."""

    def __init__(self, served: Mapping[str, Sequence[ServedTask]]) -> None:
        self._served = served
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    def draw(self, request: CurriculumDraw) -> CurriculumDrawn:
        """The task of the request's group: drawn by the run's curriculum of the split (made now, with
        the request's policy and seed, at the run's first draw)."""
        tasks = self._tasks(request.split)
        try:
            policy = CurriculumPolicy(**request.policy)
        except (TypeError, ArgumentError) as exc:
            raise CurriculumRefusedError(422, f"the curriculum's policy: {exc}") from None
        run = self._runs.get(request.run)
        if run is None:
            run = self._runs[request.run] = _Run(policy, request.seed, {})
            while len(self._runs) > MAX_RUNS:
                self._runs.popitem(last=False)
        elif (run.policy, run.seed) != (policy, request.seed):
            raise CurriculumRefusedError(
                409,
                f"run '{request.run}' draws with another policy or seed than it started with: keep one "
                "per run (AgentEnv.curriculum's)",
            )
        self._runs.move_to_end(request.run)
        curriculum = run.splits.get(request.split)
        if curriculum is None:
            curriculum = run.splits[request.split] = Curriculum(
                range(len(tasks)), policy=run.policy, seed=run.seed
            )
        index = curriculum.draw(request.group)
        task = tasks[index]
        return CurriculumDrawn(index=index, task_id=task.spec.id, prompt=task.spec.prompt)

    def record(self, request: CurriculumScore) -> None:
        """Count a rollout's score in its group's curriculum; 404 if no draw made that group, 409 once
        the group has all the scores a group takes (a client that keeps sending holds no more memory)."""
        self._tasks(request.split)
        run = self._runs.get(request.run)
        curriculum = run.splits.get(request.split) if run is not None else None
        try:
            recorded = curriculum is not None and curriculum.record(request.group, request.score)
        except ArgumentError as exc:
            raise CurriculumRefusedError(409, str(exc)) from None
        if not recorded:
            raise CurriculumRefusedError(
                404,
                f"no group '{request.group}' of run '{request.run}' was drawn here from '{request.split}'",
            )

    def state(self, run: str) -> dict[str, Any]:
        """The run's curricula as JSON data, by split: what a checkpoint keeps."""
        held = self._runs.get(run)
        if held is None:
            raise CurriculumRefusedError(404, f"no run '{run}' drew from this server")
        return {"splits": {split: curriculum.state() for split, curriculum in held.splits.items()}}

    def restore(self, run: str, state: Mapping[str, Any]) -> None:
        """Set the run's curricula to a saved `state` (over the tasks served now)."""
        splits = state.get("splits")
        if not isinstance(splits, Mapping) or not splits:
            raise CurriculumRefusedError(422, 'a saved curriculum is {"splits": {SPLIT: STATE}}')
        restored: dict[str, Curriculum] = {}
        for split, saved in splits.items():
            indices = range(len(self._tasks(split)))
            try:
                restored[split] = Curriculum.from_state(saved, indices)
            except ArgumentError as exc:
                raise CurriculumRefusedError(422, f"split '{split}': {exc}") from None
        first = next(iter(restored.values()))
        self._runs[run] = _Run(first.policy, first.seed, restored)
        self._runs.move_to_end(run)
        while len(self._runs) > MAX_RUNS:
            self._runs.popitem(last=False)

    def rows(self) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
        """Each task's state, by run and split: (run, split, task id, its row)."""
        for run, held in self._runs.items():
            for split, curriculum in held.splits.items():
                tasks = self._served[split]
                for row in curriculum.table():
                    yield run, split, tasks[row["index"]].spec.id, row

    def _tasks(self, split: str) -> Sequence[ServedTask]:
        tasks = self._served.get(split)
        if tasks is None:
            raise CurriculumRefusedError(404, f"no split '{split}': the splits are {', '.join(self._served)}")
        return tasks
