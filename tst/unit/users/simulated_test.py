"""Simulated users played through episodes: a bundle's `users.py` writes the turns after the fixed ones
from what the agent replied and did, ends the task when it has no more to say, and a user that
raises, hangs or answers wrongly ends the episode unscored, naming itself."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent_env import Episode, EpisodeError, ErrorCode, TurnResult, load_bundle, trajectory_of
from tst.support.bundles import a_task, make_bundle
from tst.unit.users._play import played

USERS = """
    import asyncio
    import json
    import time


    def reader(context, title):
        shelved = context.envs["shelf"].books
        if title in shelved:
            return None
        if "which" in context.reply.lower():
            return f"{title}, please."
        return f"You have not shelved {title} yet."


    def recorder(context):
        # Answers with what it saw: each turn's number, message, calls with their results, and reply.
        seen = [
            [turn.turn, turn.prompt, [[c.tool, c.arguments, c.result] for c in turn.calls], turn.reply]
            for turn in context.turns
        ]
        return json.dumps(seen)


    def talker(context):
        return "And another thing."


    def broken(context):
        raise ValueError("the script lost its place")


    def sleeper(context):
        time.sleep(30)


    async def waiter(context):
        await asyncio.sleep(30)


    def counter(context):
        return 42
"""


def shelf_bundle(root: Path, user: dict[str, Any], **task: Any) -> Path:
    fields = {"turns": ["I would like a book shelved."], "user": user, **task}
    return make_bundle(
        root,
        tasks={"train": [a_task(**fields)]},
        files={"users.py": textwrap.dedent(USERS)},
    )


def failure(root: Path, reply: str = "Which book?") -> EpisodeError:
    with pytest.raises(EpisodeError) as caught:
        played(root, [([], reply)])
    return caught.value


READER = {"function": "reader", "args": {"title": "Dune"}, "max_turns": 4}


def test_the_user_s_next_message_opens_the_next_turn_and_depends_on_what_the_agent_replied(tmp_path):
    root = shelf_bundle(tmp_path, READER)

    _, asked = played(root, [([], "Which book would you like?")])
    _, told = played(root, [([], "Done, it is on the shelf.")])

    assert asked[0] == TurnResult(done=False, turn=2, prompt="Dune, please.")
    assert told[0] == TurnResult(done=False, turn=2, prompt="You have not shelved Dune yet.")


def test_a_user_that_has_no_more_to_say_ends_the_task_which_is_then_scored(tmp_path):
    episode, ends = played(shelf_bundle(tmp_path, READER), [([], "Which book?"), (["Dune"], "Shelved.")])

    assert [end.done for end in ends] == [False, True]
    assert ends[-1].score == 1.0 and ends[-1].turn == 2
    trajectory = trajectory_of(episode)
    assert [(t.prompt, t.prompt_by, t.reply) for t in trajectory.turns] == [
        ("I would like a book shelved.", "task", "Which book?"),
        ("Dune, please.", "simulated user", "Shelved."),
    ]
    assert trajectory.score == 1.0


def test_the_user_sees_every_turn_so_far_with_its_calls_and_results_and_the_last_reply(tmp_path):
    root = shelf_bundle(tmp_path, {"function": "recorder", "max_turns": 3})

    _, ends = played(root, [(["Dune"], "one"), ([], "two")])

    first = [[1, "I would like a book shelved.", [["put_book", {"title": "Dune"}, "ok"]], "one"]]
    assert json.loads(ends[0].prompt or "") == first
    assert json.loads(ends[1].prompt or "") == [*first, [2, ends[0].prompt, [], "two"]]


def test_max_turns_ends_the_task_however_long_the_user_would_go_on(tmp_path):
    _, ends = played(
        shelf_bundle(tmp_path, {"function": "talker", "max_turns": 3}), [([], "a"), ([], "b"), ([], "c")]
    )

    assert [(end.turn, end.done) for end in ends] == [(2, False), (3, False), (3, True)]


def test_the_fixed_turns_come_first_and_the_user_writes_the_rest(tmp_path):
    root = shelf_bundle(tmp_path, {"function": "talker"}, turns=["First.", "Second."])

    _, ends = played(root, [([], "a"), ([], "b")])

    assert [end.prompt for end in ends] == ["Second.", "And another thing."]


def test_a_user_that_raises_ends_the_episode_unscored_naming_the_user_and_the_error(tmp_path):
    error = failure(shelf_bundle(tmp_path, {"function": "broken"}))

    assert error.code == ErrorCode.USER_FAILED
    assert error.message == (
        "the simulated user (user function 'broken') raised ValueError: the script lost its place: "
        "the episode ended unscored"
    )


@pytest.mark.parametrize("function", ["sleeper", "waiter"])
def test_a_user_that_never_answers_is_cut_off_at_its_timeout(tmp_path, function):
    error = failure(shelf_bundle(tmp_path, {"function": function, "timeout_s": 0.2}))

    assert error.code == ErrorCode.USER_FAILED
    assert "did not answer within its timeout_s of 0.2 s; raise the task's user.timeout_s" in error.message


def test_a_user_that_answers_something_but_a_message_or_none_fails_saying_what_to_return(tmp_path):
    error = failure(shelf_bundle(tmp_path, {"function": "counter"}))

    assert error.code == ErrorCode.USER_FAILED
    assert "returned 42; return the next message (a str), or None to end the task" in error.message


def test_a_failed_user_leaves_its_episode_failed_and_torn_down(tmp_path):
    root = shelf_bundle(tmp_path, {"function": "broken"})
    episode = Episode(load_bundle(root).task("train", 0))

    async def main() -> None:
        await episode.deploy()
        with pytest.raises(EpisodeError):
            await episode.end_turn("Which book?")
        await episode.teardown()

    asyncio.run(main())

    assert episode.outcome is not None and episode.outcome.kind == "failed"
    assert episode.outcome.code == ErrorCode.USER_FAILED
    assert episode.score is None
