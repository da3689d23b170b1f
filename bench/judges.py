"""12. Judged rewards: B rollouts of a task scored by a judge whose every answer takes 200 ms.

A bundle served in process (`AgentEnv.local`) has one task scored by a `judge` verifier alone, its
endpoint a stand-in on loopback that answers each verdict after `LATENCY_S` (as a hosted model
answers a short verdict), its bound 64 requests at once. B rollouts each leave a note of their own
(so no two transcripts are alike and no verdict comes from the cache), then are scored two ways, side
by side in alternating rounds, each on fresh episodes (of B environments kept per way, as TRL keeps
its own): one at a time, as GRPOTrainer's `get_reward`
asks them in turn; and at once, with `score_batch`, the reward function that ends the batch's
episodes together, so their judgements are in flight together. Target: at once at least 8x faster.
"""

from __future__ import annotations

import asyncio
import statistics
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import Figure, Results

LATENCY_S = 0.2
SPEEDUP_TARGET = 8.0
MODEL = "bench-judge"
ENV = '''
from agent_env import Env, tool


class Desk(Env):
    """A desk to leave notes on."""

    def setup(self, seed):
        self.notes = []

    @tool
    def note(self, text: str) -> str:
        """Leave a note.

        Args:
            text: The note.
        """
        self.notes.append(text)
        return "noted"
'''
TOML = """
[agents.clerk]
envs = ["desk"]

[judges.bench]
model = "{model}"
rubric = "The clerk left a note."
max_concurrency = 64
timeout_s = 60
retries = 0
"""
TASK = (
    '{"id": "leave-a-note", "agent": "clerk", "turns": ["Leave a note."], '
    '"verifiers": [{"type": "judge", "judge": "bench"}]}\n'
)


def judged_bundle(root: Path) -> Path:
    (root / "envs").mkdir(parents=True, exist_ok=True)
    (root / "tasks").mkdir(exist_ok=True)
    (root / "bundle.toml").write_text(TOML.format(model=MODEL))
    (root / "envs" / "desk.py").write_text(textwrap.dedent(ENV))
    (root / "tasks" / "train.jsonl").write_text(TASK)
    return root


def stand_in_judge() -> Any:
    """A chat-completions endpoint whose every verdict (full marks) comes after `LATENCY_S`."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request: Request) -> JSONResponse:
        await request.json()
        await asyncio.sleep(LATENCY_S)
        message = {"role": "assistant", "content": '{"reason": "A note was left.", "score": 10}'}
        return JSONResponse(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 0,
                "model": MODEL,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 300, "completion_tokens": 12, "total_tokens": 312},
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def played(environments: Sequence[Any], env: Any, label: str) -> Sequence[Any]:
    """The environments, each reset on the task (a fresh episode on its session, as TRL reuses its
    environments batch after batch) and leaving a note no other leaves."""
    for n, environment in enumerate(environments):
        environment.reset(**env.dataset[0])
        environment.note(text=f"note {n} of {label}")
    return environments


def one_at_a_time(environments: Sequence[Any]) -> None:
    """GRPOTrainer without score_batch: each get_reward in turn ends its open turn and waits."""


def at_once(environments: Sequence[Any]) -> None:
    from agent_env.training.trl import score_batch

    score_batch(completions=[[]] * len(environments), environments=environments)


WAYS: dict[str, Callable[[Sequence[Any]], None]] = {"one at a time": one_at_a_time, "score_batch": at_once}


def scored(environments: Sequence[Any], way: Callable[[Sequence[Any]], None]) -> tuple[float, int]:
    """Seconds to score the environments as `way` does, and how many did not score 1."""
    started = time.perf_counter()
    way(environments)
    rewards = [environment.get_reward() for environment in environments]
    return time.perf_counter() - started, sum(reward != 1.0 for reward in rewards)


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    try:
        import openai  # noqa: F401

        from agent_env.openenv import BackgroundServer
        from agent_env.training.trl import AgentEnv
    except ImportError as exc:
        results.add(Figure("judges", "judged rollouts", float("nan"), "x", note=f"not installed: {exc}"))
        return
    rollouts, rounds = (8, 1) if quick else (64, 3)
    judge = BackgroundServer(stand_in_judge()).start()
    seconds: dict[str, list[float]] = {name: [] for name in WAYS}
    wrong = 0
    try:
        with AgentEnv.local(
            judged_bundle(workdir / "judged"),
            judge_url=f"{judge.url}/v1",
            judge_model=MODEL,
            max_concurrent_envs=2 * rollouts,
        ) as env:
            factory: Any = env.factory  # one toolset: a class
            held = {name: [factory() for _ in range(rollouts)] for name in WAYS}
            for round_ in range(rounds):
                for name, way in WAYS.items():
                    took, failed = scored(played(held[name], env, f"{name} {round_}"), way)
                    seconds[name].append(took)
                    wrong += failed
    finally:
        judge.stop()
    alone, together = (statistics.median(seconds[name]) for name in WAYS)
    results.add(
        Figure("judges", f"{rollouts} rollouts judged one at a time (200 ms a verdict)", alone, "s"),
        Figure("judges", f"{rollouts} rollouts judged at once (score_batch)", together, "s"),
        Figure(
            "judges",
            "at once: x faster than one at a time",
            alone / together,
            "x",
            None if quick else SPEEDUP_TARGET,  # 8 rollouts cannot be 8x faster: quick checks it runs
            lower=False,
        ),
        Figure("judges", "rollouts not scored 1", float(wrong), "", 0.0),
    )
