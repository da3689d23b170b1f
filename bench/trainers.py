"""10. Slow tools under the two trainers: a GRPO batch's rollouts under GRPOTrainer and AsyncGRPO.

Fake tasks (`agent_env.testing`) whose one tool, `wait`, takes a fixed time (an `asyncio.sleep` on the
server), served in this process on loopback and played through `AgentEnv`. B rollouts (groups of G),
each making K calls of `wait`, one after another's answer, then `end_turn`; the model is the script
of `bench/scripted_model.py`, so each rollout makes exactly K calls and generating costs next to
nothing. Played twice, one after the other, on fresh tasks:

- GRPOTrainer (TRL 1.16): one real `trainer.train()` step of the tiny CPU model, its `generate` stood
  in for. TRL's tool loop runs each generation round's calls one rollout at a time.
- AsyncGRPO: TRL's own `AsyncRolloutWorker` in its spawned process, with B rollout slots
  (`max_inflight_tasks`), generating from a stand-in for vLLM's `/v1/completions` on loopback. The
  worker checks that vLLM is importable though it only talks to the server over HTTP: that check
  alone is stood in for, as tst/trl/async_grpo_test.py does.

Each is timed by the server's episode events, the same way: from the first episode deployed to the
B-th scored. Beside it, GRPOTrainer's own `step_time` (generation, tools, scores, loss and backward)
and the time until the worker's queue holds B scored samples, ready to train on; each against the
serial sum B x K x the tool's time. No target: the figures say when each trainer fits.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from bench.common import Figure, Results
from bench.scripted_model import Script, ScriptedGenerate, completions_app

SECTION = "trainers"
NEEDS = ("trl", "torch", "aiohttp")
WAIT_S = 300.0
"""A bound on any one wait of this section (the rollout process's start, B samples)."""


@dataclass(frozen=True)
class Plan:
    rollouts: int
    """B: the batch's rollouts, and AsyncGRPO's rollout slots."""
    generations: int
    """G: rollouts per group (per prompt)."""
    calls: int
    """K: the calls of `wait` each rollout makes, one after another."""
    tool_s: float

    @property
    def serial_s(self) -> float:
        """Every call of the batch one after another: B x K x the tool's time."""
        return self.rollouts * self.calls * self.tool_s

    @property
    def label(self) -> str:
        return f"{self.rollouts} rollouts x {self.calls} calls of {self.tool_s:g} s"


QUICK = Plan(rollouts=2, generations=2, calls=1, tool_s=0.1)
FULL = Plan(rollouts=8, generations=4, calls=4, tool_s=0.5)


@dataclass
class Played:
    """What one trainer's play of the batch measured."""

    rollouts_s: float
    """From the first episode deployed to the B-th scored, by the server's events."""
    whole_s: float
    """GRPOTrainer's step_time; AsyncGRPO's first deploy to B samples in the trainer's queue."""
    errors: int
    """Rollouts of the B that did not score 1.0 (did not make exactly K calls)."""


def train_grpo() -> Any:
    """`examples/train_grpo.py`: its tiny CPU model and GRPOConfig, as the trl tier uses them (imported
    by name, so that strict type checking of bench/ does not reach into the examples)."""
    return importlib.import_module("examples.train_grpo")


def slow_tool(seconds: float) -> Callable[..., Awaitable[str]]:
    """A tool that takes `seconds` to answer, asleep on the server's loop: a slow search or build that
    holds no thread, so the server answers as many at once as are called."""

    async def wait(step: int) -> str:
        """Wait on something slow (a search, a build, a test run) and say which step it answered.

        Args:
            step: Which of the rollout's calls this is, from 1.
        """
        await asyncio.sleep(seconds)
        return f"step {step} answered"

    return wait


@contextlib.contextmanager
def served(plan: Plan) -> Iterator[tuple[Any, list[Any]]]:
    """B / G tasks of one toolset served in process, through `AgentEnv`; each scores 1.0 when its
    rollout made exactly K calls of `wait`."""
    from agent_env import VerifierContext
    from agent_env.openenv import build_served_app
    from agent_env.testing import FakeTask, calls, fake_served
    from agent_env.training.trl import AgentEnv

    def made_k_calls(context: VerifierContext) -> float:
        return 1.0 if [name for name, _ in calls(context)] == ["wait"] * plan.calls else 0.0

    tasks = [
        FakeTask(
            f"slow-{n}",
            tools=[slow_tool(plan.tool_s)],
            turns=(f"Look up record {n} step by step, then say done.",),
            envs=("records",),
            score=made_k_calls,
        )
        for n in range(plan.rollouts // plan.generations)
    ]
    env = AgentEnv.serving(build_served_app(fake_served({"train": tasks})))
    try:
        yield env, tasks
    finally:
        env.close()


def _events(tasks: list[Any], kind: type) -> list[Any]:
    """Every event of `kind` of the tasks' episodes, oldest first."""
    events = [e for task in tasks for episode in task.episodes for e in episode.events if isinstance(e, kind)]
    return sorted(events, key=lambda e: e.at)


def first_deployed(tasks: list[Any]) -> float:
    from agent_env import Deployed

    return float(_events(tasks, Deployed)[0].at)


def first_scored(tasks: list[Any], count: int) -> tuple[float, int]:
    """When the `count`-th episode was scored, and how many of the first `count` scored below 1.0."""
    from agent_env import Scored

    scored = _events(tasks, Scored)[:count]
    if len(scored) < count:
        raise RuntimeError(f"only {len(scored)} of {count} rollouts were scored")
    return float(scored[-1].at), sum(1 for e in scored if e.score != 1.0)


def grpo_trainer(plan: Plan, workdir: Path) -> Played:
    """One `trainer.train()` step of GRPOTrainer over the batch."""
    from transformers.trainer_callback import PrinterCallback
    from trl.trainer.grpo_trainer import GRPOTrainer

    model, tokenizer = train_grpo().tiny_model_and_tokenizer()
    config = train_grpo().grpo_config(
        str(workdir / "grpo"),
        on_cpu=True,
        per_device_train_batch_size=plan.rollouts,
        num_generations=plan.generations,
        max_tool_calling_iterations=plan.calls + 1,
        max_completion_length=256 * (plan.calls + 2),
        max_steps=1,
        shuffle_dataset=False,
    )
    with served(plan) as (env, tasks):
        trainer = GRPOTrainer(
            model=model,
            args=config,
            processing_class=tokenizer,
            train_dataset=env.dataset,
            environment_factory=env.factory,
        )
        trainer.remove_callback(PrinterCallback)  # the step's logs are read below, not printed
        with mock.patch.object(
            trainer.model, "generate", side_effect=ScriptedGenerate(tokenizer, Script(plan.calls))
        ):
            trainer.train()
        scored_at, errors = first_scored(tasks, plan.rollouts)
        step_s = float(trainer.state.log_history[0]["step_time"])
        return Played(scored_at - first_deployed(tasks), step_s, errors)


def async_grpo(plan: Plan) -> Played:
    """TRL's AsyncGRPO rollout worker with B slots, until B rollouts are scored and queued."""
    from accelerate.state import PartialState  # type: ignore[import-untyped]
    from trl.experimental.async_grpo import async_rollout_worker

    from agent_env.openenv import BackgroundServer

    _, tokenizer = train_grpo().tiny_model_and_tokenizer()
    vllm = BackgroundServer(completions_app(tokenizer, Script(plan.calls))).start()
    try:
        with served(plan) as (env, tasks):
            PartialState()  # the trainer's process has made its Accelerator by then; the worker logs with it
            with mock.patch.object(async_rollout_worker, "is_vllm_available", return_value=True):
                worker = async_rollout_worker.AsyncRolloutWorker(
                    model_name="tiny-qwen3",
                    dataset=env.dataset,
                    reward_funcs=[],
                    processing_class=tokenizer,
                    eos_token_ids=[tokenizer.eos_token_id],
                    environment_factory=env.factory,
                    num_generations=plan.generations,
                    max_inflight_tasks=plan.rollouts,
                    vllm_server_url=vllm.url,
                    max_tokens=96,
                    request_timeout=60,
                    max_tool_calling_iterations=plan.calls + 1,
                    child_ready_timeout=int(WAIT_S),
                )
            try:
                worker.start()
                queued_at = _samples_queued(worker, plan.rollouts)
            finally:
                _stop(worker)
            scored_at, errors = first_scored(tasks, plan.rollouts)
            started = first_deployed(tasks)
            return Played(scored_at - started, queued_at - started, errors)
    finally:
        vllm.stop()


def _samples_queued(worker: Any, count: int) -> float:
    """When the trainer's side has read `count` scored samples from the worker's queue (time.time)."""
    deadline = time.monotonic() + WAIT_S
    for _ in range(count):
        while True:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the rollout worker queued fewer than {count} samples within {WAIT_S} s")
            try:
                worker.rollout_buffer.get(timeout=1.0)
                break
            except queue.Empty:
                worker.check_health(stale_after_s=WAIT_S)
    return time.time()


def _stop(worker: Any) -> None:
    """Stop the worker as AsyncGRPOTrainer does, draining its queue meanwhile as the trainer would, so
    the rollout process can flush what it queued and exit."""
    stopped = threading.Event()

    def drain() -> None:
        while not stopped.is_set():
            with contextlib.suppress(queue.Empty):
                worker.rollout_buffer.get(timeout=0.1)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        worker.stop()
    finally:
        stopped.set()
        reader.join()


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        note = f"not installed: {', '.join(missing)}; pip install 'trl==1.16.*' torch aiohttp"
        results.add(
            Figure(SECTION, "GRPOTrainer and AsyncGRPO with slow tools", float("nan"), "s", note=note)
        )
        return
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    plan = QUICK if quick else FULL
    grpo = grpo_trainer(plan, workdir)
    async_ = async_grpo(plan)
    serial = f"x the serial sum, {plan.serial_s:g} s"
    results.add(
        Figure(SECTION, f"GRPOTrainer, {plan.label}: first deploy to last score", grpo.rollouts_s, "s"),
        Figure(SECTION, f"GRPOTrainer: the same {serial}", grpo.rollouts_s / plan.serial_s, "x"),
        Figure(
            SECTION, "GRPOTrainer: its step_time (generation, tools, scores, backward)", grpo.whole_s, "s"
        ),
        Figure(
            SECTION,
            f"AsyncGRPO worker, {plan.rollouts} slots, {plan.label}: first deploy to B-th score",
            async_.rollouts_s,
            "s",
        ),
        Figure(SECTION, f"AsyncGRPO: the same {serial}", async_.rollouts_s / plan.serial_s, "x"),
        Figure(SECTION, "AsyncGRPO: first deploy to B samples in the trainer's queue", async_.whole_s, "s"),
        Figure(
            SECTION,
            "GRPOTrainer / AsyncGRPO, first deploy to B-th score",
            grpo.rollouts_s / async_.rollouts_s,
            "x",
            lower=False,
        ),
        Figure(
            SECTION, "rollouts that did not make exactly K calls", float(grpo.errors + async_.errors), "", 0.0
        ),
    )
