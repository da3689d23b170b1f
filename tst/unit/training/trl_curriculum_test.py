"""The online curriculum from the trainer's side, driven as TRL drives environments (each rollout reset
with its row, in order, its tools, then its reward), against a real server on loopback: a group's
rollouts all get the task drawn for it, whose first message the reset returns for TRL to append; the
scores go back to the server, which draws a rarely solved task more often than one always or never
solved; `/metrics` shows each task's state; a checkpoint keeps it and a resumed run restores it; and a
split whose tasks differ in system prompt is refused saying why."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import agent_env._curriculum
from agent_env._curriculum import CurriculumPolicy
from agent_env._specs import CurriculumDraw, CurriculumScore
from agent_env.client._taskapi import TaskAPI
from agent_env.training.trl import CurriculumError, OnlineCurriculum, score_batch
from agent_env.training.trl._curriculum import STATE_FILE, holder
from tst.support.metrics import scrape
from tst.support.serving import Serve
from tst.unit.training._trl import Open, dock_task

pytestmark = pytest.mark.needs("trl_installed")

GENERATIONS = 4
MESSAGES = {"Always store C1.": "always", "Never store anything.": "never", "Rarely store C1.": "rare"}


def tasks() -> list[Any]:
    return [dock_task(name, turns=(message,)) for message, name in MESSAGES.items()]


def play_groups(curriculum: OnlineCurriculum, factory: Any, groups: int, start: int = 0) -> list[str]:
    """Play `groups` GRPO groups of the curriculum's rows as GRPOTrainer does, two a batch: each row
    reset once per generation, in order; `always` stores a crate, `never` does not, `rare` in one
    rollout of every third group. The task each group played."""
    played = []
    rows = curriculum.dataset
    environments = [factory() for _ in range(2 * GENERATIONS)]  # TRL reuses them batch after batch
    for batch in range(start, start + groups, 2):
        slots = [batch, batch + 1]
        opened = [
            environment.reset(**rows[slot])
            for environment, slot in zip(
                environments, [s for s in slots for _ in range(GENERATIONS)], strict=True
            )
        ]
        for n, (environment, message) in enumerate(zip(environments, opened, strict=True)):
            name = MESSAGES[message]
            group = batch + n // GENERATIONS
            if name == "always" or (name == "rare" and n % GENERATIONS == 0 and group % 3 == 0):
                environment.add_crate(crate="C1", bay=2)
            environment.end_turn(reply="Done.")
        score_batch([[]] * len(environments), environments=environments)
        for environment in environments:
            environment.get_reward()
        for first in (0, GENERATIONS):
            group_messages = set(opened[first : first + GENERATIONS])
            assert len(group_messages) == 1, f"a group's rollouts got different tasks: {group_messages}"
            played.append(MESSAGES[opened[first]])
    return played


def test_a_group_s_rollouts_all_get_its_task_whose_first_message_reset_returns(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": tasks()}).url)
    curriculum = env.curriculum(seed=0, rows=16)
    row = curriculum.dataset[0]
    environments = [env.factory() for _ in range(GENERATIONS)]

    opened = [environment.reset(**row) for environment in environments]

    assert row["prompt"] == [
        {"role": "system", "content": "You work on the dock."},
        {"role": "user", "content": ""},
    ]
    assert len(set(opened)) == 1 and opened[0] in MESSAGES
    assert len(curriculum.dataset) == 16 and len(set(curriculum.dataset["curriculum_slot"])) == 16


def test_only_a_group_s_first_reset_asks_the_server_for_its_task(
    serve: Serve, open_env: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = open_env(serve({"train": tasks()}).url)
    curriculum = env.curriculum(seed=0, rows=16)
    asked: list[CurriculumDraw] = []
    real_draw = TaskAPI.curriculum_draw

    def counted(api: TaskAPI, request: CurriculumDraw) -> Any:
        asked.append(request)
        return real_draw(api, request)

    monkeypatch.setattr(TaskAPI, "curriculum_draw", counted)
    environments = [env.factory() for _ in range(GENERATIONS)]

    first = [environment.reset(**curriculum.dataset[0]) for environment in environments]
    second = [environment.reset(**curriculum.dataset[1]) for environment in environments]

    assert len(set(first)) == 1 and len(set(second)) == 1
    assert len(asked) == 2 and asked[0].group != asked[1].group


def test_the_server_draws_a_rarely_solved_task_more_often_than_one_always_or_never_solved(
    serve: Serve, open_env: Open
) -> None:
    server = serve({"train": tasks()})
    env = open_env(server.url)
    curriculum = env.curriculum(policy=CurriculumPolicy(explore=1.0), seed=0, rows=128)

    played = Counter(play_groups(curriculum, env.factory, 36)[6:])

    assert played["rare"] > played["always"] and played["rare"] > played["never"]
    samples = scrape(server.url)
    draws = {
        dict(labels)["task"]: value
        for (name, labels), value in samples.items()
        if name == "agent_env_curriculum_task_draws"
    }
    assert sum(draws.values()) == 36 and draws["rare"] == max(draws.values())
    plays = {
        dict(labels)["task"]: value
        for (name, labels), value in samples.items()
        if name == "agent_env_curriculum_task_plays"
    }
    assert sum(plays.values()) == 36 * GENERATIONS
    table = curriculum.table()
    assert "online curriculum of split 'train': 3 of 3 tasks drawn" in table
    assert table.splitlines()[2].startswith("rare")


def test_a_checkpoint_keeps_the_curriculum_and_a_resumed_run_goes_on_where_it_stopped(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    env = open_env(serve({"train": tasks()}).url)
    curriculum = env.curriculum(seed=3, rows=64)
    play_groups(curriculum, env.factory, 10)
    checkpoint = tmp_path / "checkpoint-5"
    checkpoint.mkdir()
    saved = curriculum.save(checkpoint)
    expected = play_groups(curriculum, env.factory, 10, start=10)

    restarted = open_env(serve({"train": tasks()}).url)  # a new server: what the checkpoint kept alone
    resumed = restarted.curriculum(seed=3, rows=64)
    resumed.load(checkpoint)

    assert saved.name == STATE_FILE
    assert play_groups(resumed, restarted.factory, 10, start=10) == expected


def test_a_split_whose_tasks_differ_in_system_prompt_is_refused_saying_why(
    serve: Serve, open_env: Open
) -> None:
    env = open_env(serve({"train": [*tasks(), dock_task("other", system_prompt="You sail.")]}).url)

    with pytest.raises(ValueError, match="2 system prompts and 1 toolsets: a curriculum draws among tasks"):
        env.curriculum()


def test_a_score_for_a_group_the_server_never_drew_is_refused(serve: Serve, open_env: Open) -> None:
    env = open_env(serve({"train": tasks()}).url)
    curriculum = env.curriculum(rows=4)

    with pytest.raises(CurriculumError, match=r"no group 'nope' of run"):
        holder(env._fleet.settings).curriculum_score(
            CurriculumScore(run=curriculum.run, split="train", group="nope", score=1.0)
        )


def test_a_group_s_scores_past_what_a_group_takes_are_refused_409_saying_so(
    serve: Serve, open_env: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent_env._curriculum, "MAX_GROUP_SCORES", 3)
    env = open_env(serve({"train": tasks()}).url)
    curriculum = env.curriculum(rows=4)
    server = holder(env._fleet.settings)
    server.curriculum_draw(CurriculumDraw(run=curriculum.run, split="train", group="g"))
    score = CurriculumScore(run=curriculum.run, split="train", group="g", score=1.0)
    for _ in range(3):
        server.curriculum_score(score)

    with pytest.raises(CurriculumError, match="has the 3 scores a group takes"):
        server.curriculum_score(score)


def test_on_a_fleet_the_first_server_draws_for_every_group_and_groups_stay_whole_across_servers(
    serve: Serve, open_env: Open
) -> None:
    first, second = serve({"train": tasks()}), serve({"train": tasks()})
    env = open_env([first.url, second.url])
    curriculum = env.curriculum(seed=0, rows=16)

    played = play_groups(curriculum, env.factory, 4)  # asserts each group's rollouts got one task

    def drawn(url: str) -> float:
        return sum(v for (name, _), v in scrape(url).items() if name == "agent_env_curriculum_task_draws")

    assert len(played) == 4 and drawn(first.url) == 4 and drawn(second.url) == 0
    sessions = {
        url: sum(v for (name, _), v in scrape(url).items() if name == "agent_env_sessions")
        for url in (first.url, second.url)
    }
    assert all(held > 0 for held in sessions.values()), f"the rollouts did not span both servers: {sessions}"
