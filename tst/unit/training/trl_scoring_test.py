"""A batch's verifiers run side by side: the last turn's end is sent and not waited for, and
`score_batch` (a reward function GRPOTrainer hands the batch's environments) waits for every
episode's score at once; `get_reward` then hands TRL the score it holds. Driven as TRL 1.16 drives
them, against a real server on loopback whose verifiers wait at a gate."""

from __future__ import annotations

import threading

import pytest

from agent_env.testing import Gate
from agent_env.training.trl import TASK_OVER, ToolCallError, score_batch
from tst.support.serving import Serve
from tst.support.waiting import until
from tst.unit.training._trl import Open, dock_task

pytestmark = pytest.mark.needs("trl_installed")

BATCH = 4


def test_the_last_turns_end_answers_at_once_and_the_reward_waits_for_the_verifiers(
    serve: Serve, open_env: Open
) -> None:
    verify = Gate()
    env = open_env(serve({"train": [dock_task(verify_gate=verify)]}).url, reset_timeout_s=20)
    environment = env.factory()
    environment.reset(**env.dataset[0])
    environment.add_crate(crate="C1", bay=2)

    assert environment.end_turn(reply="Stored.") == TASK_OVER
    assert verify.wait_reached()  # the verifiers run on the server while the trainer goes on
    rewards: list[float | None] = []
    asking = threading.Thread(target=lambda: rewards.append(environment.get_reward()))
    asking.start()
    asking.join(0.3)
    assert asking.is_alive() and rewards == []
    verify.release()
    asking.join(10)
    assert rewards == [1.0]


def test_a_tool_call_after_the_last_turns_end_is_refused_as_the_task_is_over(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [dock_task()]}).url)
    environment = env.factory()
    environment.reset(**env.dataset[0])
    environment.end_turn(reply="Nothing to store.")

    with pytest.raises(ToolCallError, match="the task is over"):
        environment.add_crate(crate="C1", bay=2)
    assert environment.get_reward() == 0.0


def test_a_turn_before_the_last_still_waits_for_the_next_turns_prompt(serve: Serve, open_env: Open) -> None:
    task = dock_task(turns=("Store C1 in bay 2.", "Now list the crates."))
    env = open_env(serve({"train": [task]}).url)
    environment = env.factory()
    environment.reset(**env.dataset[0])

    assert environment.end_turn(reply="On it.") == "Now list the crates."
    assert environment.end_turn(reply="Done.") == TASK_OVER
    assert environment.get_reward() == 0.0
    assert task.episodes[-1].replies == ["On it.", "Done."]


def test_score_batch_runs_a_batchs_verifiers_side_by_side_and_get_reward_hands_each_its_score(
    serve: Serve, open_env: Open
) -> None:
    verify = Gate()
    task = dock_task(verify_gate=verify)
    env = open_env(serve({"train": [task]}).url)
    environments = [env.factory() for _ in range(BATCH)]
    for number, environment in enumerate(environments):
        environment.reset(**env.dataset[0])
        if number % 2 == 0:
            environment.add_crate(crate="C1", bay=2)
        # the model ends in plain text: TRL's loop stops, and no end_turn is called

    scored: list[list[float | None]] = []
    scoring = threading.Thread(
        target=lambda: scored.append(score_batch(completions=[[]] * BATCH, environments=environments))
    )
    scoring.start()
    assert until(lambda: verify.waiting == BATCH), f"{verify.waiting} of {BATCH} verifying at once"
    verify.release()
    scoring.join(10)

    assert scored == [[None] * BATCH]  # counted once: in the environments' own reward column
    assert [environment.get_reward() for environment in environments] == [1.0, 0.0, 1.0, 0.0]
    assert [episode.replies for episode in task.episodes] == [[""]] * BATCH


def test_score_batch_without_environments_as_asyncgrpo_calls_it_gives_none_for_each_completion() -> None:
    assert score_batch(completions=[[], [], []], prompts=[[], [], []]) == [None, None, None]
