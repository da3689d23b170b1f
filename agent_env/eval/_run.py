"""`evaluate`: play every task of a split `samples` times with a policy, over the real wire.

The target is a bundle (served in this process on a loopback port, as `AgentEnv.local` does) or the
URL of an agent_env server. Up to `concurrency` samples play at once, each on a session of its own,
each on a thread (a policy may block on its endpoint). Every trajectory goes to `out`, if given,
with results.json beside them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_env._bundle.reader import Bundle
from agent_env._errors import ArgumentError
from agent_env._loading import load_bundle, names_a_bundle
from agent_env._specs import TaskSpec
from agent_env._trajectory import Trajectory
from agent_env._trajectory_recorder import TrajectoryRecorder
from agent_env.client._tokens import resolve_token
from agent_env.eval._play import PlaySettings, play_sample
from agent_env.eval._policy import Policy, TaskPolicies
from agent_env.eval._results import EvalResult, eval_result

if TYPE_CHECKING:
    from agent_env.openenv import BackgroundServer

RESULTS_FILE = "results.json"
DEFAULT_SPLIT = "eval"
"""The split `split=None` plays when the target has several (its only one when it has one)."""


@dataclass(frozen=True)
class Progress:
    """Where an evaluation is: samples done of all, their mean score so far, errors so far."""

    done: int
    total: int
    mean_score: float | None
    errors: int


def evaluate(
    target: str | Path | Bundle,
    policy: Policy | TaskPolicies,
    *,
    split: str | None = DEFAULT_SPLIT,
    samples: int = 1,
    concurrency: int = 16,
    settings: PlaySettings | None = None,
    model: str | None = None,
    token: str | None = None,
    out: str | Path | None = None,
    progress: Callable[[Progress], None] | None = None,
    extra_settings: dict[str, Any] | None = None,
) -> EvalResult:
    """Play each task of `split` `samples` times with `policy`; the result, per task and in total.

    `split=None` plays the target's only split when it has one (a Harbor dataset's `train`), else
    `eval`; the result's `split` says which. A `TaskPolicies` (`ReferencePolicy`) makes each sample's
    policy for its task; a task it has none for is left out."""
    if samples < 1 or concurrency < 1:
        raise ArgumentError(f"samples and concurrency must be >= 1, got {samples} and {concurrency}")
    token = resolve_token(token)
    settings = settings or PlaySettings()
    with _Target(target, token, concurrency) as served:
        split = split if split is not None else served.default_split()
        tasks = served.tasks(split)
        jobs = [job for _ in range(samples) for task in tasks if (job := _job(task, policy)) is not None]
        recorder = TrajectoryRecorder(out) if out is not None else None
        tally = _Tally(len(jobs), progress)

        def one(job: tuple[TaskSpec, Policy]) -> Trajectory:
            task, playing = job
            trajectory = play_sample(
                served.url,
                task,
                playing,
                model=model,
                settings=settings,
                token=token,
            )
            if recorder is not None:
                recorder.record(trajectory)
            tally.add(trajectory)
            return trajectory

        try:
            with ThreadPoolExecutor(max(1, min(concurrency, served.capacity, len(jobs)))) as pool:
                trajectories = list(pool.map(one, jobs))
        finally:
            if recorder is not None:
                recorder.close()
        fingerprint = served.fingerprint
    result = eval_result(
        trajectories,
        model=model,
        split=split,
        tasks_fingerprint=fingerprint,
        settings={
            "samples": samples,
            "concurrency": concurrency,
            **asdict(settings),
            **(extra_settings or {}),
        },
    )
    if out is not None:
        Path(out, RESULTS_FILE).write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return result


def _job(task: TaskSpec, policy: Policy | TaskPolicies) -> tuple[TaskSpec, Policy] | None:
    """One sample of `task` and the policy that plays it; None when a `TaskPolicies` has none for it."""
    if isinstance(policy, TaskPolicies):
        playing = policy.for_task(task)
        return None if playing is None else (task, playing)
    return task, policy


class _Tally:
    """The running count behind the progress line; samples finish on many threads."""

    def __init__(self, total: int, progress: Callable[[Progress], None] | None) -> None:
        self._lock = threading.Lock()
        self._total, self._progress = total, progress
        self._done = self._errors = 0
        self._scores: list[float] = []

    def add(self, trajectory: Trajectory) -> None:
        with self._lock:
            self._done += 1
            if trajectory.outcome.kind == "error":
                self._errors += 1
            else:
                self._scores.append(trajectory.score or 0.0)
            mean = sum(self._scores) / len(self._scores) if self._scores else None
            if self._progress is not None:
                self._progress(Progress(self._done, self._total, mean, self._errors))


class _Target:
    """The server to play on: one started here for a bundle, or the one at a URL."""

    def __init__(self, target: str | Path | Bundle, token: str | None, concurrency: int) -> None:
        from agent_env.client._taskapi import TaskAPI

        self._server: BackgroundServer | None = None
        if isinstance(target, Bundle) or names_a_bundle(target):
            from agent_env.openenv import BackgroundServer, build_app

            bundle = target if isinstance(target, Bundle) else load_bundle(target)
            app = build_app(bundle, max_concurrent_envs=concurrency, token=token)
            self._server = BackgroundServer(app).start()
            url = self._server.url
        else:
            url = str(target)
        try:
            self._api = TaskAPI(url, token=token)
        except BaseException:
            self.close()
            raise
        self.url = self._api.url
        self.capacity = self._api.max_concurrent_envs
        self.fingerprint = self._api.fingerprint

    def tasks(self, split: str) -> list[TaskSpec]:
        return self._api.tasks(split)

    def default_split(self) -> str:
        """The split played when none is named: the only one, if there is one, else `DEFAULT_SPLIT`."""
        splits = self._api.splits()
        return splits[0] if len(splits) == 1 else DEFAULT_SPLIT

    def close(self) -> None:
        if hasattr(self, "_api"):
            self._api.close()
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> _Target:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
