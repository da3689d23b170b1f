"""A bundle with a simulated user, served on loopback and driven through AgentEnv as TRL drives it:
`end_turn` answers with the user's message exactly as with a fixed next turn, and a user that raises
or never answers ends the rollout with no reward, within the end_turn deadline."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent_env.openenv import build_app
from agent_env.training.trl import TASK_OVER, AgentEnv, ToolCallError
from tst.support.bundles import a_task, make_bundle
from tst.support.serving import Serve
from tst.unit.training._trl import Open

pytestmark = pytest.mark.needs("trl_installed")

USERS = """
    import time


    def reader(context, title):
        if title in context.envs["shelf"].books:
            return None
        return f"{title}, please." if "which" in context.reply.lower() else f"Where is {title}?"


    def broken(context):
        raise RuntimeError("lost the plot")


    def stuck(context):
        time.sleep(60)
"""


def user_bundle(root: Path, user: dict[str, Any]) -> Path:
    task = a_task(turns=["I would like a book shelved."], user=user)
    return make_bundle(root, tasks={"train": [task]}, files={"users.py": textwrap.dedent(USERS)})


def rollout(serve: Serve, open_env: Open, root: Path, **options: Any) -> tuple[AgentEnv, Any]:
    env = open_env(serve(build_app(root)).url, **options)
    environment = env.factory()
    environment.reset(**dict(env.dataset[0]))
    return env, environment


def test_end_turn_answers_with_the_user_s_message_and_the_rollout_is_scored_once_the_user_is_done(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    _, environment = rollout(
        serve, open_env, user_bundle(tmp_path, {"function": "reader", "args": {"title": "Dune"}})
    )

    assert environment.end_turn(reply="Which book would you like?") == "Dune, please."
    assert environment.put_book(title="Dune") == "ok"
    assert environment.end_turn(reply="Shelved.") == TASK_OVER
    assert environment.get_reward() == 1.0


def test_a_user_that_raises_ends_the_rollout_with_no_reward_and_end_turn_says_why(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    _, environment = rollout(serve, open_env, user_bundle(tmp_path, {"function": "broken"}))

    with pytest.raises(ToolCallError) as caught:
        environment.end_turn(reply="Which book?")

    assert "the simulated user (user function 'broken') raised RuntimeError: lost the plot" in str(
        caught.value
    )
    assert environment.get_reward() is None


def test_a_user_that_never_answers_ends_the_rollout_at_the_end_turn_deadline_with_no_reward(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    root = user_bundle(tmp_path, {"function": "stuck", "timeout_s": 600})
    _, environment = rollout(serve, open_env, root, reset_timeout_s=1.5)

    with pytest.raises(ToolCallError) as caught:
        environment.end_turn(reply="Which book?")

    assert "end_turn missed its deadline of 1.5 s" in str(caught.value)
    assert environment.get_reward() is None
