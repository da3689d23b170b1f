"""A relative judge from the trainer's side, driven as GRPOTrainer drives it (reset each rollout, its
tools, `end_turn`, then `score_batch` with the batch's environments, then each `get_reward`): the
batch's consecutive rollouts of one task are one group, judged in one request; without `score_batch`
(AsyncGRPO, or a trainer not given it) each rollout is judged alone; a group across a fleet's servers
is judged alone too, with a warning; and a long run of one task is cut into groups of at most 64."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env._specs import MAX_GROUP_SIZE
from agent_env.training.trl import TASK_OVER, GroupAcrossServersWarning, score_batch
from agent_env.training.trl._batch import groups_of
from tst.support.judge_stand_in import API_KEY, JudgeStandIn, contains
from tst.support.serving import Serve
from tst.unit.judges._play import KEY_VARIABLE, judged_bundle
from tst.unit.training._trl import Open

pytestmark = pytest.mark.needs("trl_installed", "judge_installed", "openenv_installed")


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, API_KEY)


def played(
    serve: Serve, open_env: Open, tmp_path: Path, replies: list[str], *, batch: bool
) -> tuple[JudgeStandIn, list[float | None]]:
    """Play one rollout per reply of the judged task, as GRPOTrainer does; `batch`: with score_batch."""
    from agent_env.openenv import build_app

    stand_in = JudgeStandIn(rule=contains("thank"))
    url = f"{serve(stand_in.app).url}/v1"
    env = open_env(serve(build_app(judged_bundle(tmp_path, url, relative=True))).url)
    environments = [env.factory() for _ in replies]
    for environment in environments:
        environment.reset(**env.dataset[0])
    for environment, reply in zip(environments, replies, strict=True):
        environment.put_book(title="Dune")
        assert environment.end_turn(reply=reply) == TASK_OVER
    if batch:
        assert score_batch([[]] * len(replies), environments=environments) == [None] * len(replies)
    return stand_in, [environment.get_reward() for environment in environments]


def test_score_batch_has_a_group_s_rollouts_judged_together_and_get_reward_hands_each_its_verdict(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    replies = ["Shelved.", "Shelved, thank you!", "Shelved."]
    stand_in, rewards = played(serve, open_env, tmp_path, replies, batch=True)

    assert stand_in.groups == [3] and len(stand_in.requests) == 1
    assert rewards == [0.0, 1.0, 0.0]


def test_without_score_batch_each_rollout_is_judged_alone(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    stand_in, rewards = played(serve, open_env, tmp_path, ["Shelved.", "Shelved, thank you!"], batch=False)

    assert stand_in.groups == [] and len(stand_in.requests) == 2
    assert rewards == [0.0, 1.0]


def test_consecutive_rollouts_of_one_task_on_one_server_are_a_group_and_the_rest_are_alone() -> None:
    a, b = ("http://a", "train", 0), ("http://a", "train", 1)

    groups = groups_of([a, a, a, b, None, b, b])

    assert groups[0] == groups[1] == groups[2] and groups[0] is not None and groups[0][1] == 3
    assert groups[3] is None and groups[4] is None  # a run of one is no group
    assert groups[5] == groups[6] and groups[5] is not None and groups[5][1] == 2
    assert groups[5][0] != groups[0][0]


def test_a_group_across_servers_is_judged_alone_and_a_warning_says_so_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("agent_env.training.trl._batch._warned_across", False)
    spread = [("http://a", "train", 0), ("http://b", "train", 0)]

    with pytest.warns(
        GroupAcrossServersWarning, match="on 2 servers, so its relative judge scores each alone"
    ):
        assert groups_of(spread) == [None, None]
    assert groups_of(spread) == [None, None]  # said once


def test_a_run_longer_than_a_judge_reads_at_once_is_cut_into_groups() -> None:
    groups = groups_of([("http://a", "train", 0)] * (MAX_GROUP_SIZE + 3))

    assert {group[1] for group in groups if group is not None} == {MAX_GROUP_SIZE, 3}
    assert len({group[0] for group in groups if group is not None}) == 2
