"""TRL's AsyncGRPO rollout worker plays and scores rollouts on a served bundle, from `env.factory`.

AsyncGRPO hands `environment_factory` to `AsyncRolloutWorker`, which pickles it into a spawned
process; there a thread pool resets environments, calls their tools and reads `get_reward`, while the
generations come from a vLLM server over HTTP. These tests run TRL 1.16's own worker, unchanged,
against `build_served_app` over fake tasks served on loopback, with a stand-in for vLLM's
`/v1/completions` (`_vllm_stand_in.py`): no GPU and no vLLM are needed. One more runs it on the
example bundle's tasks that `train_async_grpo.py`'s loop kept by their pass rates, sampled on a
stand-in for vLLM's chat completions (`chat_stand_in.py`) served at the same URL.

The worker refuses to start unless `vllm` is importable, although nothing it runs imports vLLM (it
talks to the server over HTTP with aiohttp, which the dev install provides). That import check, in
the parent process only, is the one thing of vLLM stood in for (`is_vllm_available`); everything the
worker does, in both processes, is TRL's own.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import multiprocessing.resource_tracker
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"


from agent_env import load_bundle  # noqa: E402
from agent_env._contexts import VerifierContext  # noqa: E402
from agent_env._episode import Episode, EpisodeState  # noqa: E402
from agent_env.openenv import BackgroundServer, build_served_app  # noqa: E402
from agent_env.testing import FakeTask, Gate, calls, fake_served  # noqa: E402
from agent_env.training.trl import AgentEnv  # noqa: E402
from examples.train_async_grpo import DEFAULT_MODEL, before_training, parse  # noqa: E402
from examples.train_grpo import WHARF, tiny_model_and_tokenizer  # noqa: E402
from tst.support.chat_stand_in import ChatStandIn  # noqa: E402
from tst.support.tools import add_crate, list_crates  # noqa: E402
from tst.support.waiting import child_processes, until  # noqa: E402
from tst.trl._async_worker import COLLECT_S, GENERATIONS, collect_groups, rollout_worker, stop  # noqa: E402
from tst.trl._vllm_stand_in import StandInVLLM  # noqa: E402

HELD_TOGETHER = 4
"""The stand-in holds the first generations until this many are in and as many episodes are live."""
TOOL_DEADLINE_S = 2.0
TEARDOWN_S = 30.0
SCORING_BAY = 2


@dataclass
class StoreCrates:
    """The model: every rollout stores a crate of its own (C0, C1, ...), as its first call.

    Of each task's rollouts, in turn, one stores its crate in bay 2 and ends its turn itself, the
    next in bay 4 and then answers in text, leaving `get_reward` to end the turn.
    """

    prompts: tuple[str, ...]
    crates: int = 0
    first_turns: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, conversation: str) -> str:
        responses = conversation.count("<tool_response>")
        if responses == 0:
            return self._store(conversation)
        if responses == 1:
            crate, bay = _stored(conversation)
            if bay == SCORING_BAY:
                return _call("end_turn", reply=f"Stored {crate} in bay {bay}.")
            return f"{crate} is in bay {bay}.<|im_end|>"
        return "Done.<|im_end|>"

    def _store(self, conversation: str) -> str:
        task = next(prompt for prompt in self.prompts if prompt in conversation)
        with self.lock:
            crate = f"C{self.crates}"
            self.crates += 1
            turn = self.first_turns.get(task, 0)
            self.first_turns[task] = turn + 1
        return _call("add_crate", crate=crate, bay=SCORING_BAY if turn % 2 == 0 else 4)


def _call(tool: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': tool, 'arguments': arguments})}\n</tool_call><|im_end|>"


def _stored(text: str) -> tuple[str, int]:
    found = re.search(r'"crate": "(C\d+)", "bay": (\d+)', text)
    assert found, f"no add_crate call in {text!r}"
    return found[1], int(found[2])


def stored_in_bay_2(context: VerifierContext) -> float:
    return 1.0 if any(args.get("bay") == SCORING_BAY for name, args in calls(context)) else 0.0


@dataclass
class Served:
    env: AgentEnv
    tasks: list[FakeTask]

    def episodes(self) -> list[Episode]:
        return [episode for task in self.tasks for episode in task.episodes]

    def live(self) -> int:
        return sum(len(task.live) for task in self.tasks)

    def episode_storing(self, crate: str) -> Episode:
        [episode] = [e for e in self.episodes() if any(args.get("crate") == crate for _, args in calls(e))]
        return episode


PROMPTS = (
    "Store the north quay's crate.",
    "Store the south quay's crate.",
    "Store the crate on the jammed belt.",
)


@pytest.fixture
def serve_dock() -> Iterator[Callable[..., Served]]:
    """Serve three tasks of one toolset, `dock`; on those named `stuck`, `add_crate` never answers."""
    stuck_tool = Gate()
    envs: list[AgentEnv] = []

    def serve(*, stuck: tuple[int, ...], tool_timeout: float) -> Served:
        tasks = [
            FakeTask(
                f"quay-{n}",
                tools=[add_crate, list_crates],
                turns=(prompt,),
                envs=("dock",),
                score=stored_in_bay_2,
                tool_gates={"add_crate": stuck_tool} if n in stuck else {},
            )
            for n, prompt in enumerate(PROMPTS)
        ]
        env = AgentEnv.serving(build_served_app(fake_served({"train": tasks})), tool_timeout_s=tool_timeout)
        envs.append(env)
        return Served(env, tasks)

    yield serve
    stuck_tool.release()
    for env in envs:
        env.close()


@pytest.fixture
def stand_in_vllm() -> Iterator[Callable[..., tuple[StandInVLLM, str]]]:
    servers: list[BackgroundServer] = []

    def start(stand_in: StandInVLLM) -> tuple[StandInVLLM, str]:
        server = BackgroundServer(stand_in.app).start()
        servers.append(server)
        return stand_in, server.url

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def no_process_left() -> Iterator[None]:
    """Fail a test that leaves a process of its own behind.

    multiprocessing's resource tracker, started once for the life of this process by the first spawn
    context to make a queue, is started first so that it is not counted.
    """
    multiprocessing.resource_tracker.ensure_running()
    before = child_processes()
    yield
    assert until(lambda: child_processes() <= before, 10), f"processes left: {child_processes() - before}"
    assert multiprocessing.active_children() == []


def scored_as(reward: float, score: float | None) -> bool:
    """Whether TRL's reward is the verifiers' score: NaN where the episode could not be scored."""
    return math.isnan(reward) if score is None else reward == score


def crate_of(sample: Any) -> str:
    [call] = [
        c
        for message in sample.completion
        for c in message.get("tool_calls") or []
        if c["function"]["name"] == "add_crate"
    ]
    return str(call["function"]["arguments"]["crate"])


@pytest.mark.timeout(240)
def test_asyncgrpos_rollout_worker_plays_rollouts_at_once_from_the_unpickled_factory_scored_by_the_verifiers(
    serve_dock: Callable[..., Served],
    stand_in_vllm: Callable[..., tuple[StandInVLLM, str]],
    no_process_left: None,
) -> None:
    served = serve_dock(stuck=(2,), tool_timeout=TOOL_DEADLINE_S)
    env, tasks = served.env, served.tasks
    _, tokenizer = tiny_model_and_tokenizer()
    stand_in, vllm_url = stand_in_vllm(
        StandInVLLM(
            tokenizer, StoreCrates(PROMPTS), hold=HELD_TOGETHER, ready=lambda: served.live() >= HELD_TOGETHER
        )
    )
    factory = env.factory
    assert served.episodes() == []  # the Task API's specs list the dock's tools: nothing was played

    worker = rollout_worker(env, tokenizer, vllm_url)
    try:
        worker.start()
        samples = collect_groups(worker, {0, 1, 2})
    finally:
        stop(worker)

    unplayed = [e for e in served.episodes() if not calls(e)]
    assert unplayed == [], "the rollout process played a task to list the tools"
    assert stand_in.held_together == HELD_TOGETHER
    assert stand_in.ready_while_held, f"the server never had {HELD_TOGETHER} episodes live at once"

    column = f"rewards/{factory.__name__}"
    assert column == "rewards/dock"
    for group, task in enumerate(tasks):  # the worker's groups follow the dataset's rows
        assert len(samples[group]) == GENERATIONS
        for sample in samples[group]:
            episode = served.episode_storing(crate_of(sample))
            assert episode in task.episodes
            assert scored_as(sample.metrics[column], episode.score)
            assert scored_as(sample.metrics["reward"], episode.score)  # the environment's is the only reward
    for group in (0, 1):  # of each pair, the rollout that stored its crate in bay 2 scored 1
        assert sorted(s.metrics[column] for s in samples[group]) == [0.0, 1.0]
        for sample in samples[group]:
            episode = served.episode_storing(crate_of(sample))
            # the model ended its turn itself, or left it open for get_reward to end
            assert episode.replies == ([f"Stored {crate_of(sample)} in bay 2."] if episode.score else [""])
    for sample in samples[2]:  # the jammed belt: add_crate missed its deadline, so no score
        assert math.isnan(sample.metrics[column])
        assert sample.advantage == 0
        [missed, *_] = [m["content"] for m in sample.completion if m["role"] == "tool"]
        assert "deadline" in missed, missed

    assert until(lambda: served.live() == 0, TEARDOWN_S), f"{served.live()} episodes left on the server"
    assert all(e.state is EpisodeState.TORN_DOWN for e in served.episodes())


@pytest.mark.timeout(240)
def test_a_rollout_process_killed_mid_rollout_has_its_episodes_torn_down_on_the_server_within_30_s(
    serve_dock: Callable[..., Served],
    stand_in_vllm: Callable[..., tuple[StandInVLLM, str]],
    no_process_left: None,
) -> None:
    served = serve_dock(stuck=(0, 1, 2), tool_timeout=600.0)  # every rollout is caught in add_crate
    env = served.env
    _, tokenizer = tiny_model_and_tokenizer()
    _, vllm_url = stand_in_vllm(StandInVLLM(tokenizer, StoreCrates(PROMPTS)))
    env.factory  # noqa: B018  # built here, before the worker pickles it
    worker = rollout_worker(env, tokenizer, vllm_url)
    try:
        worker.start()
        mid_call = lambda: sum(1 for task in served.tasks for e in task.live if calls(e))  # noqa: E731
        assert until(lambda: mid_call() >= 3, COLLECT_S), "the rollouts never reached add_crate"
        [rollout_process] = multiprocessing.active_children()
        os.kill(rollout_process.pid, signal.SIGKILL)
        rollout_process.join(10)

        assert until(lambda: served.live() == 0, TEARDOWN_S), (
            f"{served.live()} episodes left after {TEARDOWN_S} s"
        )
        assert all(e.state is EpisodeState.TORN_DOWN for e in served.episodes())
    finally:
        # Not after the kill: TRL's stop() sets a multiprocessing Event, and Event.set() waits for
        # every process waiting on it to wake; the killed one never does.
        if multiprocessing.active_children():
            worker.stop()


KEPT_PLAYS = {
    "store-crate-000": ["solve", "solve"],
    "move-crate-000": ["solve", "text"],
    "restock-000": ["text", "solve"],
}
"""The loop's samples on the chat stand-in: one train task always passes, two half the time, the rest
never; with bounds (0.25, 0.75), the loop keeps those two."""


@pytest.mark.timeout(240)
def test_asyncgrpos_rollout_worker_plays_only_the_tasks_the_async_script_kept_by_their_pass_rates(
    serve: Callable[..., Any],
    no_process_left: None,
    tmp_path: Path,
) -> None:
    _, tokenizer = tiny_model_and_tokenizer()
    chat = ChatStandIn(load_bundle(WHARF), "train", KEPT_PLAYS, api_key=None, model=DEFAULT_MODEL)
    completions = StandInVLLM(tokenizer, lambda conversation: "Nothing to do.<|im_end|>")
    vllm_url = serve(Starlette(routes=[*chat.app.routes, *completions.app.routes])).url
    env = AgentEnv.local(WHARF)
    try:
        plan, _ = parse(
            [
                *("--env-url", env.url, "--vllm-url", vllm_url, "--eval-out", str(tmp_path)),
                *("--select-by-pass-rate", "0.25", "0.75", "--samples", "2"),
            ]
        )
        dataset, _ = before_training(plan, env)
        env.factory  # noqa: B018  # built here, before the worker pickles it
        worker = rollout_worker(env, tokenizer, vllm_url, dataset)
        try:
            worker.start()
            samples = collect_groups(worker, set(range(len(dataset))))
        finally:
            stop(worker)
    finally:
        env.close()

    train = load_bundle(WHARF).tasks("train")
    kept = {task.turns[0]: task.id for task in train if task.index in dataset["index"]}
    played = [first_prompt(sample) for rows in samples.values() for sample in rows]
    assert sorted(kept.values()) == ["move-crate-000", "restock-000"]
    assert set(played) == set(kept), "the worker played a task the loop left out, or missed one it kept"
    assert all(sample.metrics["reward"] == 0.0 for rows in samples.values() for sample in rows)


def first_prompt(sample: Any) -> str:
    return str(next(message["content"] for message in sample.prompt if message["role"] == "user"))
