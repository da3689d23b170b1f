"""`GET /metrics`: what the server holds and has done, in Prometheus' text format (`prometheus_client`).

Two kinds of figure. What the server holds now (sessions, episodes, teardowns, sandboxes, the warm
pool) is read at each scrape from the very status `GET /{env_name}/status` answers, so the two never
disagree. What episodes did (their outcomes, tool calls, and the seconds of each phase) is counted
once per episode, when it is torn down, from its trajectory: the moment the server logs it, so the
counters match the episode log line for line. The tasks its bundle's load skipped, because they do
not load (`skip_broken_tasks`), are a gauge set once. With a recorder, what it wrote and every trajectory it
lost (by reason) are read from it at each scrape. Each judgement a `judge` verifier asks is counted as
it ends (`judged`, an observer of the server's `Judging`): by outcome (ok, cached, failed and why), the
seconds its endpoint took, and the tokens it counted. Each online curriculum's state per task (plays,
mean, spread, signal, draws, last drawn) is read from the server's curricula at each scrape. Each
server has a registry of its own, so two servers in one process never mix their figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agent_env._trajectory import Trajectory
from agent_env._trajectory_recorder import DROP_REASONS, TrajectoryRecorder
from agent_env.judges._judging import FAILURES, JudgeCall
from agent_env.openenv._curricula import Curricula
from agent_env.openenv._wire import SessionCounts
from agent_env.sandbox._pool import PoolStatus

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The text format every Prometheus reads (the metrics' names need none of the newer format's escaping)."""
SECONDS_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
)
"""From a tool answered in a millisecond to a verifier that runs for minutes."""


class Holding(Protocol):
    """What the server holds now, as `ServerStatus` (the `/status` route's answer) has it."""

    connections: int
    live_episodes: int
    live_sandboxes: int
    tearing_down: int
    max_concurrent_envs: int
    sessions: SessionCounts
    warm_pool: PoolStatus | None


class ServerMetrics:
    """One server's figures: `count` each episode once it is gone; `exposition` answers a scrape."""

    def __init__(
        self,
        holding: Callable[[], Holding],
        recorder: TrajectoryRecorder | None = None,
        *,
        skipped_tasks: int = 0,
        curricula: Curricula | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        Gauge(
            "agent_env_tasks_skipped",
            "Tasks of the bundle left out at load because they do not load (--skip-broken-tasks).",
            registry=self.registry,
        ).set(skipped_tasks)
        self._episodes = Counter(
            "agent_env_episodes",
            "Episodes torn down, by how they ended (scored, failed with its error code, abandoned).",
            ["outcome", "code"],
            registry=self.registry,
        )
        self._tool_calls = Counter(
            "agent_env_tool_calls",
            "Tool calls of episodes torn down, by tool and outcome (ok, or the error code the agent saw).",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self._call_seconds = Histogram(
            "agent_env_tool_call_seconds",
            "Seconds a tool call took, by tool.",
            ["tool"],
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self._phase_seconds = {
            phase: Histogram(
                f"agent_env_{phase}_seconds",
                f"Seconds an episode's {phase} took.",
                buckets=SECONDS_BUCKETS,
                registry=self.registry,
            )
            for phase in ("deploy", "verify", "teardown")
        }
        self._judge_calls = Counter(
            "agent_env_judge_calls",
            "Judgements a judge verifier asked, by outcome (ok; cached: no request made; failed) and, "
            f"for a failed one, why ({', '.join(FAILURES)}).",
            ["outcome", "reason"],
            registry=self.registry,
        )
        for outcome in ("ok", "cached"):
            self._judge_calls.labels(outcome, "")
        self._judge_seconds = Histogram(
            "agent_env_judge_seconds",
            "Seconds a judge's endpoint took to answer a judgement (its retries included).",
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self._judge_tokens = Counter(
            "agent_env_judge_tokens",
            "Tokens the judges' endpoints counted, by kind (prompt, completion), where they report usage.",
            ["kind"],
            registry=self.registry,
        )
        for kind in ("prompt", "completion"):
            self._judge_tokens.labels(kind)
        self.registry.register(_Holding(holding))
        if recorder is not None:
            self.registry.register(_Recording(recorder))
        if curricula is not None:
            self.registry.register(_Curricula(curricula))

    def count(self, trajectory: Trajectory) -> None:
        """Count an episode that is gone, from its trajectory."""
        outcome = trajectory.outcome
        self._episodes.labels(outcome.kind, outcome.code or "").inc()
        for turn in trajectory.turns:
            for call in turn.calls:
                self._tool_calls.labels(call.tool, call.error_code or "ok").inc()
                if call.seconds is not None:
                    self._call_seconds.labels(call.tool).observe(call.seconds)
        timings = trajectory.timings
        for phase, seconds in (
            ("deploy", timings.deploy_s),
            ("verify", timings.verify_s),
            ("teardown", timings.teardown_s),
        ):
            if seconds is not None:
                self._phase_seconds[phase].observe(seconds)

    def judged(self, call: JudgeCall) -> None:
        """Count one judgement (an observer of the server's `Judging`)."""
        self._judge_calls.labels(call.outcome, call.reason).inc()
        if call.seconds is not None:
            self._judge_seconds.observe(call.seconds)
        if call.prompt_tokens is not None:
            self._judge_tokens.labels("prompt").inc(call.prompt_tokens)
        if call.completion_tokens is not None:
            self._judge_tokens.labels("completion").inc(call.completion_tokens)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _Curricula(Collector):
    """Each online curriculum's state per task (`agent_env._curriculum`), read at each scrape."""

    FIGURES = (
        ("plays", "Scores the task's groups got (rollouts scored)."),
        ("mean", "The mean of the task's scores."),
        ("spread", "The standard deviation of the task's scores."),
        ("signal", "The chance that the task's next group's scores differ, from its recent groups."),
        ("draws", "Groups the curriculum drew the task for."),
        ("last_drawn", "The draw (counted from 1 in the run) that last picked the task; 0: never."),
    )

    def __init__(self, curricula: Curricula) -> None:
        self._curricula = curricula

    def describe(self) -> list[Metric]:
        return list(self._families().values())

    def collect(self) -> Iterator[Metric]:
        families = self._families()
        for run, split, task, row in self._curricula.rows():
            for name, family in families.items():
                family.add_metric([run, split, task], float(row[name] or 0))
        yield from families.values()

    def _families(self) -> dict[str, GaugeMetricFamily]:
        return {
            name: GaugeMetricFamily(
                f"agent_env_curriculum_task_{name}", text, labels=["run", "split", "task"]
            )
            for name, text in self.FIGURES
        }


class _Holding(Collector):
    """The gauges of what the server holds, read from its status at each scrape."""

    def __init__(self, holding: Callable[[], Holding]) -> None:
        self._holding = holding

    def describe(self) -> list[Metric]:
        return []  # the names are known only once collected; a registry does not need them up front

    def collect(self) -> Iterator[Metric]:
        now = self._holding()
        for name, text, value in (
            ("connections", "WebSocket connections open now.", now.connections),
            ("live_episodes", "Episodes begun and not yet torn down.", now.live_episodes),
            ("live_sandboxes", "Sandboxes of live episodes.", now.live_sandboxes),
            ("teardowns_in_flight", "Episodes being torn down now.", now.tearing_down),
            ("max_concurrent_envs", "Sessions the server holds at most.", now.max_concurrent_envs),
        ):
            yield GaugeMetricFamily(f"agent_env_{name}", text, value=value)
        sessions = GaugeMetricFamily(
            "agent_env_sessions", "Sessions holding capacity, by kind.", labels=["kind"]
        )
        sessions.add_metric(["websocket"], now.sessions.websocket)
        sessions.add_metric(["without_client"], now.sessions.without_client)
        yield sessions
        pool = now.warm_pool
        if pool is None:
            return
        for name, text, value in (
            ("size", "Containers the warm pool keeps ready, at most.", pool.size),
            ("ready", "Containers of the warm pool ready now.", pool.ready),
            ("starting", "Containers of the warm pool starting now.", pool.starting),
        ):
            yield GaugeMetricFamily(f"agent_env_warm_pool_{name}", text, value=value)
        for name, text, value in (
            ("handed_out", "Episodes that got a container from the warm pool.", pool.handed_out),
            ("started_cold", "Episodes that found the warm pool empty.", pool.started_cold),
            ("replaced", "Warm pool containers that died while they waited.", pool.replaced),
        ):
            yield CounterMetricFamily(f"agent_env_warm_pool_{name}", text, value=value)


class _Recording(Collector):
    """What the server's recorder wrote and lost, read from it at each scrape (its counts are its own)."""

    def __init__(self, recorder: TrajectoryRecorder) -> None:
        self._recorder = recorder

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "agent_env_trajectories_recorded", "Trajectories written.", value=self._recorder.written
        )
        dropped = CounterMetricFamily(
            "agent_env_trajectories_dropped",
            "Trajectories not recorded, by reason (unwritable, queue_full, write_failed).",
            labels=["reason"],
        )
        counts = self._recorder.dropped_by_reason
        for reason in DROP_REASONS:
            dropped.add_metric([reason], counts.get(reason, 0))
        yield dropped
