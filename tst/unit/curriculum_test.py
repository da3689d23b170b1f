"""The online curriculum's policy, played with scores from a rule: every rollout of a group gets the
group's task; tasks never played are explored; a task solved rarely is drawn more often than one
always solved or never solved; the same seed and scores draw the same tasks; a saved state goes on
where it stopped; an evaluation's samples can start it; and bad knobs are refused saying which."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from agent_env import ArgumentError
from agent_env._curriculum import MAX_GROUP_SCORES, Curriculum, CurriculumPolicy

ALWAYS, NEVER, RARE = 0, 1, 2
GENERATIONS = 8


def scores_of(index: int, group: int) -> list[float]:
    """A group's scores by a rule: task 0 always solved, task 1 never, task 2 once in every third
    group (one rollout of eight); every other task half of the time."""
    if index == ALWAYS:
        return [1.0] * GENERATIONS
    if index == NEVER:
        return [0.0] * GENERATIONS
    if index == RARE:
        return [1.0 if n == 0 and group % 3 == 0 else 0.0 for n in range(GENERATIONS)]
    return [float(n % 2) for n in range(GENERATIONS)]


def run(curriculum: Curriculum, groups: int, start: int = 0) -> list[int]:
    """Draw `groups` groups, each asked by all its rollouts, and score them by the rule."""
    drawn = []
    for group in range(start, start + groups):
        key = f"g{group}"
        tasks = {curriculum.draw(key) for _ in range(GENERATIONS)}
        assert len(tasks) == 1, "every rollout of a group gets the same task"
        (index,) = tasks
        for score in scores_of(index, group):
            assert curriculum.record(key, score)
        drawn.append(index)
    return drawn


def test_each_rollout_of_a_group_gets_the_group_s_task_and_scores_count_for_it():
    curriculum = Curriculum(range(10), seed=1)

    first = curriculum.draw("g")

    assert all(curriculum.draw("g") == first for _ in range(7))
    assert curriculum.record("g", 1.0) and curriculum.record("g", 0.0)
    assert not curriculum.record("never-drawn", 1.0)
    record = curriculum.tasks[first]
    assert (record.plays, record.mean, record.draws) == (2, 0.5, 1)
    assert curriculum.signal(record) > 0.9, "two plays that differ: a group of eight likely will too"


def test_a_task_solved_rarely_is_drawn_more_often_than_one_always_or_never_solved():
    curriculum = Curriculum([ALWAYS, NEVER, RARE], seed=0)

    drawn = Counter(run(curriculum, 120)[20:])  # past the first draws, as the counts settle

    assert drawn[RARE] > 2 * drawn[ALWAYS] and drawn[RARE] > 2 * drawn[NEVER]
    assert drawn[ALWAYS] > 0 and drawn[NEVER] > 0, "a task with no signal is still checked now and then"


def test_tasks_never_played_are_explored_before_long():
    curriculum = Curriculum(range(20), policy=CurriculumPolicy(explore=0.5), seed=3)

    drawn = run(curriculum, 80)

    assert set(drawn) == set(range(20))


def test_the_same_seed_and_scores_draw_the_same_tasks_and_another_seed_others():
    assert run(Curriculum(range(30), seed=7), 40) == run(Curriculum(range(30), seed=7), 40)
    assert run(Curriculum(range(30), seed=7), 40) != run(Curriculum(range(30), seed=8), 40)


def test_a_saved_state_goes_on_where_it_stopped_as_json():
    straight = Curriculum(range(12), seed=5)
    run(straight, 30)
    expected = run(straight, 30, start=30)

    stopped = Curriculum(range(12), seed=5)
    run(stopped, 30)
    saved = json.loads(json.dumps(stopped.state()))
    resumed = Curriculum.from_state(saved, range(12))

    assert run(resumed, 30, start=30) == expected
    assert resumed.table() == straight.table()


def test_a_saved_state_over_tasks_served_now_drops_the_gone_and_adds_the_new():
    curriculum = Curriculum(range(3), seed=0)
    run(curriculum, 6)

    resumed = Curriculum.from_state(curriculum.state(), range(1, 5))

    assert sorted(resumed.tasks) == [1, 2, 3, 4]
    assert resumed.tasks[4].draws == 0 and resumed.tasks[1] == curriculum.tasks[1]


def test_what_is_not_a_saved_state_is_refused():
    with pytest.raises(ArgumentError, match="not a curriculum's saved state"):
        Curriculum.from_state({"policy": {}}, range(3))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"group_size": -3}, "group_size -3 is not 1 to"),
        ({"tasks": {"0": {"counts": {"1.000000": -1.0}}}}, "is not a number of plays"),
        ({"tasks": {"0": {"counts": {"1.000000": "many"}}}}, "is not a number of plays"),
    ],
)
def test_a_saved_state_whose_numbers_would_break_the_draw_is_refused_saying_which(change: dict, said: str):
    state = {**Curriculum(range(3), seed=0).state(), **change}

    with pytest.raises(ArgumentError, match=said):
        Curriculum.from_state(state, range(3))


def test_an_evaluation_s_samples_start_the_counts_so_tasks_with_signal_lead_at_once():
    curriculum = Curriculum(range(4), policy=CurriculumPolicy(explore=0.0), seed=2)
    curriculum.seed_from({0: [1.0] * 8, 1: [0.0] * 8, 2: [1.0, 0.0] * 4, 3: [0.5, 0.5]})

    weights = {index: curriculum.weight(record) for index, record in curriculum.tasks.items()}

    assert curriculum.tasks[2].plays == 8 and curriculum.tasks[2].mean == 0.5
    assert curriculum.tasks[2].spread == 0.5
    assert all(weights[2] > 3 * weights[other] for other in (0, 1, 3))


def test_a_task_with_partial_credit_that_always_scores_alike_has_no_signal_and_one_that_varies_has():
    curriculum = Curriculum(range(2), seed=0)
    curriculum.seed_from({0: [0.75] * 8, 1: [0.25, 0.75, 0.75, 0.5] * 2})

    alike, varies = (curriculum.signal(curriculum.tasks[index]) for index in (0, 1))

    assert alike < 0.1 < 0.9 < varies


def test_an_evaluation_s_measure_starts_a_task_as_its_samples_would():
    measured = Curriculum(range(2), seed=0)
    measured.seed_measured(0, 8, mean=0.25, spread=0.4330127, low=0.0, high=1.0)
    measured.seed_measured(1, 8, mean=1.0, spread=0.0, low=1.0, high=1.0)
    sampled = Curriculum(range(2), seed=0)
    sampled.seed_from({0: [1.0, 1.0] + [0.0] * 6, 1: [1.0] * 8})

    for index in (0, 1):
        assert measured.signal(measured.tasks[index]) == pytest.approx(sampled.signal(sampled.tasks[index]))
        assert measured.tasks[index].mean == pytest.approx(sampled.tasks[index].mean)


def test_a_task_whose_next_groups_score_alike_loses_its_lead_as_its_early_signal_is_forgotten():
    curriculum = Curriculum(range(1), policy=CurriculumPolicy(memory=0.5), seed=0)
    curriculum.seed_from({0: [1.0, 0.0] * 4})
    before = curriculum.signal(curriculum.tasks[0])

    for group in range(3):
        curriculum.draw(f"g{group}")
        for _ in range(GENERATIONS):
            curriculum.record(f"g{group}", 1.0)

    assert before > 0.9 and curriculum.signal(curriculum.tasks[0]) < 0.5


@pytest.mark.parametrize(
    ("knobs", "said"),
    [
        ({"explore": 1.5}, "explore is a chance"),
        ({"sharpness": 0}, "sharpness must be above 0"),
        ({"floor": 0}, "floor must be above 0"),
        ({"memory": 2}, "memory must be above 0 and at most 1"),
        ({"unseen": 0}, "unseen must be above 0"),
    ],
)
def test_a_knob_out_of_its_range_is_refused_naming_it(knobs: dict, said: str):
    with pytest.raises(ArgumentError, match=said):
        CurriculumPolicy(**knobs)


def test_a_group_takes_its_rollouts_scores_and_no_more_so_a_client_that_keeps_sending_holds_no_memory():
    curriculum = Curriculum([0], seed=0)
    curriculum.draw("g")
    for n in range(MAX_GROUP_SCORES):
        assert curriculum.record("g", (n % 997) / 996)

    with pytest.raises(ArgumentError, match=f"has the {MAX_GROUP_SCORES} scores a group takes"):
        curriculum.record("g", 1.0)
    assert curriculum.tasks[0].plays == MAX_GROUP_SCORES


def test_scores_not_seen_for_many_draws_are_dropped_from_a_task_s_recent_plays():
    curriculum = Curriculum([0], seed=0)
    curriculum.draw("first")
    for n in range(100):
        curriculum.record("first", n / 100)
    for group in range(30):
        curriculum.draw(f"g{group}")
        curriculum.record(f"g{group}", 1.0)

    assert list(curriculum.tasks[0].counts) == ["1.000000"]


def test_a_score_outside_0_to_1_is_refused():
    curriculum = Curriculum([0], seed=0)
    curriculum.draw("g")

    with pytest.raises(ArgumentError, match="between 0 and 1"):
        curriculum.record("g", 1.5)
