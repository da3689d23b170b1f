"""The concierge example, whose replies are judged: `check` loads it without asking any judge,
`replay` asks the judge given by `--judge-url` and every reference play scores 1 by the rubric's rule,
`--verifier-output` shows each verdict's reason, and with `--judge-cache` a second replay asks nothing;
`play` shows the reason before the score."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import agent_env
from agent_env import load_solutions
from agent_env._verifiers import JudgeCheck, ReplyCheck
from tst.support.judge_stand_in import API_KEY, MODEL, JudgeStandIn, accurate_and_courteous
from tst.support.serving import Serve

pytestmark = pytest.mark.needs("judge_installed", "openenv_installed")  # the judge, and its stand-in's server

CONCIERGE = Path(__file__).resolve().parents[3] / "examples" / "concierge"


def agent_env_cli(*args: object, stdin: str = "", **environment: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_env.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "AGENTENV_JUDGE_KEY": API_KEY, **environment},
    )


def scores(replayed: str) -> list[str]:
    """The score column of replay's table (its rows: split, index, id, toolset, calls, score, ...)."""
    return [line.split()[5] for line in replayed.splitlines() if line.startswith(("train ", "eval "))]


def judge_url(serve: Serve) -> tuple[JudgeStandIn, str]:
    stand_in = JudgeStandIn(rule=accurate_and_courteous)
    return stand_in, f"{serve(stand_in.app).url}/v1"


@pytest.mark.needs("judge_installed")
def test_every_task_is_checked_exactly_and_judged_by_the_shared_judge_with_its_rubric_file():
    bundle = agent_env.load_bundle(CONCIERGE)

    [judge] = bundle.judges
    assert judge.rubric == (CONCIERGE / "rubrics" / "reply.md").read_text()
    assert judge.api_key_env == "OPENAI_API_KEY" and (judge.scale.min, judge.scale.max) == (0, 10)
    for split in ("train", "eval"):
        assert set(load_solutions(bundle, split)) == {task.id for task in bundle.tasks(split)}
        for task in bundle.tasks(split):
            assert [type(v.spec) for v in task.verifiers] == [ReplyCheck, JudgeCheck]


@pytest.mark.needs("judge_installed")
def test_check_loads_it_without_asking_a_judge_or_needing_its_key():
    done = agent_env_cli("check", CONCIERGE, OPENAI_API_KEY="")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "concierge: ok: 1 envs, 1 agents, tasks: eval 2, train 3"


@pytest.mark.needs("judge_installed", "openenv_installed")
def test_replay_asks_the_judge_given_and_every_reference_play_scores_1(serve: Serve):
    stand_in, url = judge_url(serve)

    done = agent_env_cli("replay", CONCIERGE, "--judge-url", url, "--judge-model", MODEL, "--verifier-output")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 of 5 tasks scored as their reference play expects" in done.stdout
    assert "verifiers[1] (judge) said:\n      The reply names room 214 and is courteous." in done.stdout
    assert len(stand_in.requests) == 5


@pytest.mark.needs("judge_installed", "openenv_installed")
def test_a_second_replay_with_a_judge_cache_asks_the_judge_nothing(serve: Serve, tmp_path: Path):
    stand_in, url = judge_url(serve)
    flags = ("--judge-url", url, "--judge-model", MODEL, "--judge-cache", tmp_path)

    first = agent_env_cli("replay", CONCIERGE, *flags)
    second = agent_env_cli("replay", CONCIERGE, *flags)

    assert first.returncode == second.returncode == 0, first.stdout + second.stdout
    assert len(stand_in.requests) == 5
    assert scores(first.stdout) == scores(second.stdout) == ["1.00"] * 5


@pytest.mark.needs("judge_installed")
def test_replay_without_the_judge_s_key_stops_before_any_play_saying_which_variable_to_set():
    done = agent_env_cli("replay", CONCIERGE, OPENAI_API_KEY="")

    assert done.returncode == 2
    assert "reads its endpoint's key from $OPENAI_API_KEY, which is not set" in done.stderr


@pytest.mark.needs("judge_installed", "openenv_installed")
def test_a_replay_whose_judge_fails_shows_each_play_unscorable_with_why(serve: Serve):
    stand_in = JudgeStandIn(status=500)
    url = f"{serve(stand_in.app).url}/v1"

    done = agent_env_cli("replay", CONCIERGE, "--split", "eval", "--judge-url", url, "--judge-model", MODEL)

    assert done.returncode == 1
    assert done.stdout.count("VERIFIER_FAILED") == 2 and "answered 500" in done.stdout


@pytest.mark.needs("judge_installed", "openenv_installed")
def test_play_in_the_terminal_shows_the_judge_s_reason_before_the_score(serve: Serve):
    _, url = judge_url(serve)
    moves = 'find_booking {"guest": "Ada Lovelace"}\n/end Room 214, enjoy your stay.\n'

    done = agent_env_cli("play", CONCIERGE, "--judge-url", url, "--judge-model", MODEL, stdin=moves)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith(
        "verifiers[1] (judge) said:\n  The reply names room 214 and neither welcomes nor thanks the guest.\n"
        "verifiers[0] (reply): 1.00\nverifiers[1] (judge): 0.50\nscore: 0.75"
    )
