"""Rollouts through `AgentEnv` against the example bundle served with Docker sandboxes.

The helper is driven as TRL 1.16 drives it: the factory called with no argument, `reset` with a
dataset row (without its `environment` column, as in multi-environment mode), tools called with
keyword arguments, `get_reward` read once per rollout, and one instance reused for many rollouts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent_env.training.trl import TASK_OVER, AgentEnv
from tst.integration._containers import sandbox_containers
from tst.support.wharf import BASH_TASK, SINGLE_TURN_TASK, TWO_TURN_TASK, WHARF


@pytest.fixture(scope="module")
def env() -> Iterator[AgentEnv]:
    with AgentEnv.local(WHARF, sandbox="docker") as served:
        yield served


def rollout(env: AgentEnv, index: int) -> tuple[Any, dict[str, Any]]:
    """A fresh instance of the row's toolset class and the row as TRL passes it to `reset`."""
    row = dict(env.dataset[index])
    toolset = row.pop("environment")
    return env.factory[toolset](), row  # type: ignore[index]


def test_rollouts_on_one_reused_environment_score_as_the_items_verifier_scores_them(env: AgentEnv) -> None:
    environment, row = rollout(env, SINGLE_TURN_TASK)

    environment.reset(**row)
    stored = environment.add_crate(crate="C17", bay=5, kind="dry")
    environment.end_turn(reply="Stored C17 in bay 5.")
    first = environment.get_reward()
    environment.reset(**row)
    wrong_bay = environment.add_crate(crate="C17", bay=4, kind="dry")
    second = environment.get_reward()

    assert "C17" in row["prompt"][-1]["content"] and "bay 5" in row["prompt"][-1]["content"]
    assert stored == "crate C17 (dry) stored in bay 5"
    assert wrong_bay == "crate C17 (dry) stored in bay 4"
    assert (first, second) == (1.0, 0.0)


def test_a_two_turn_task_hands_over_its_second_prompt_when_the_first_turn_ends(env: AgentEnv) -> None:
    environment, row = rollout(env, TWO_TURN_TASK)

    environment.reset(**row)
    environment.add_crate(crate="C16", bay=2, kind="dry")
    second_prompt = environment.end_turn(reply="Stored.")
    environment.move_crate(crate="C16", to_bay=6)
    after_last = environment.end_turn(reply="Moved.")

    assert second_prompt == "Change of plan: move the crate you just stored to bay 6."
    assert after_last == TASK_OVER
    assert environment.get_reward() == 1.0


def test_a_task_played_in_its_sandbox_has_a_bash_toolset_of_its_own_plays_in_a_container_and_scores_one(
    env: AgentEnv, docker_client: Any
) -> None:
    environment, row = rollout(env, BASH_TASK)

    environment.reset(**row)
    host = environment.bash(command="hostname")
    written = environment.bash(command="awk -F, 'NR>1 {s += $2} END {print s}' manifest.csv > total.txt")
    containers = sandbox_containers(docker_client)
    reward = environment.get_reward()

    assert type(environment).__name__ != type(rollout(env, SINGLE_TURN_TASK)[0]).__name__
    assert env.dataset[BASH_TASK]["environment"] == "dock+bash"
    assert [c[:12] for c in containers] == [host.split()[0]]
    assert written == "[exit code: 0]"
    assert reward == 1.0
