"""TRL's AsyncGRPO rollout worker as AsyncGRPOTrainer makes, reads and stops it, for the tests that
drive it against a stand-in for vLLM (`_vllm_stand_in.py`)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

from accelerate.state import PartialState
from trl.experimental.async_grpo import async_rollout_worker

from agent_env.training.trl import AgentEnv

GENERATIONS = 2
"""Rollouts per group, so each task is played twice per pass over the dataset."""
IN_FLIGHT = 6
"""The worker's rollout slots: the first pass over the three tasks starts all at once."""
COLLECT_S = 120.0


def rollout_worker(
    env: AgentEnv, tokenizer: Any, vllm_url: str, dataset: Any = None, *, generations: int = GENERATIONS
) -> Any:
    """TRL's worker, with the arguments AsyncGRPOTrainer gives it, generating from `vllm_url`, on
    `dataset` (default: `env.dataset`), `generations` rollouts a group.

    The trainer's process has made its `Accelerator` by then, which the worker's logging needs.
    """
    PartialState()
    with mock.patch.object(async_rollout_worker, "is_vllm_available", return_value=True):
        return async_rollout_worker.AsyncRolloutWorker(
            model_name="tiny-qwen3",
            dataset=env.dataset if dataset is None else dataset,
            reward_funcs=[],
            processing_class=tokenizer,
            eos_token_ids=[tokenizer.eos_token_id],
            environment_factory=env.factory,
            num_generations=generations,
            max_inflight_tasks=IN_FLIGHT,
            vllm_server_url=vllm_url,
            max_tokens=96,
            request_timeout=60,
            max_tool_calling_iterations=4,
            child_ready_timeout=180,
        )


def collect_until(worker: Any, done: Callable[[list[Any]], bool]) -> list[Any]:
    """The scored samples the trainer reads from the worker's queue, until `done(samples)`."""
    samples: list[Any] = []
    deadline = time.monotonic() + COLLECT_S
    while not done(samples):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"the worker scored only {samples} within {COLLECT_S} s"
        try:
            samples.append(worker.rollout_buffer.get(timeout=min(remaining, 5)))
        except queue.Empty:
            worker.check_health(stale_after_s=COLLECT_S)
    return samples


def collect_groups(worker: Any, groups: set[int], *, generations: int = GENERATIONS) -> dict[int, list[Any]]:
    """The scored samples of `groups` (of `generations` each), as the trainer reads them from the
    worker's queue."""

    def complete(samples: list[Any]) -> bool:
        return all(sum(sample.group_id == group for sample in samples) >= generations for group in groups)

    by_group: dict[int, list[Any]] = {}
    for sample in collect_until(worker, complete):
        by_group.setdefault(sample.group_id, []).append(sample)
    return by_group


def stop(worker: Any) -> None:
    """Stop the worker as AsyncGRPOTrainer does, reading its queue meanwhile as the trainer would have,
    so the rollout process can flush what it queued and exit by itself."""
    stopped = threading.Event()

    def drain() -> None:
        while not stopped.is_set():
            try:
                worker.rollout_buffer.get(timeout=0.1)
            except queue.Empty:
                continue

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        worker.stop()
    finally:
        stopped.set()
        reader.join()
