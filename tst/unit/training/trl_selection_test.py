"""Training on the tasks with signal: `agent-env eval -n K`'s measures of each task (the spread of its
scores, its mean, its pass rate) choose the rows of `AgentEnv.dataset_for`, against a real server on
loopback, as a user runs eval then the trainer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_env.eval import evaluate
from agent_env.eval._results import EvalResult
from agent_env.training.trl import EvalResultsError, tasks_with_signal
from tst.support.outcomes import Outcome, OutcomePolicy, outcome_tasks
from tst.support.serving import Serve
from tst.unit.training._trl import Open

pytestmark = pytest.mark.needs("trl_installed")

IDS = ["always", "often", "sometimes", "never", "unreachable"]
PLAYS: dict[str, list[Outcome]] = {
    "always": ["pass"] * 4,
    "often": ["pass", "pass", "pass", "fail"],  # 0.75
    "sometimes": ["pass", "error", "fail", "fail"],  # 1 of the 3 played: 0.33
    "never": ["fail"] * 4,
    "unreachable": ["error"] * 4,  # no pass rate
}


def evaluated(url: str, tmp_path: Path, split: str = "train") -> Path:
    """`agent-env eval URL --split SPLIT -n 4 --out tmp_path` as Python runs it; the results.json."""
    evaluate(url, OutcomePolicy(PLAYS), split=split, samples=4, concurrency=2, out=tmp_path)
    return tmp_path / "results.json"


PARTIAL_IDS = ["partial", "flat", "solved", "unreachable"]
PARTIAL_PLAYS: dict[str, list[Outcome]] = {
    "partial": [0.03, 0.11, 0.07, 0.05],  # partial credit that differs: pass rate 0, signal for GRPO
    "flat": [0.05] * 4,  # partial credit, all alike: no signal
    "solved": ["pass", "pass", "pass", "fail"],  # 0.75, spread 0.43
    "unreachable": ["error"] * 4,
}


def evaluated_partly(url: str, tmp_path: Path) -> Path:
    """The results.json of the partial-credit tasks, each sampled 4 times."""
    evaluate(url, OutcomePolicy(PARTIAL_PLAYS), split="train", samples=4, concurrency=2, out=tmp_path)
    return tmp_path / "results.json"


def prompts(rows: object) -> list[str]:
    return [row["prompt"][-1]["content"] for row in rows]  # type: ignore[attr-defined]


def test_dataset_for_keeps_the_tasks_whose_measured_pass_rate_lies_within_the_bounds_both_included(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(IDS)}).url
    results = evaluated(url, tmp_path)
    env = open_env(url)

    rows = env.dataset_for("train", pass_rate=(1 / 3, 0.75), results=results, unmeasured="drop")

    assert prompts(rows) == ["often", "sometimes"]
    assert [row["index"] for row in rows] == [1, 2]


def test_tasks_with_signal_reads_the_same_choice_from_the_results_alone(serve: Serve, tmp_path: Path) -> None:
    results = evaluated(serve({"train": outcome_tasks(IDS)}).url, tmp_path)

    assert tasks_with_signal(results, pass_rate=(0.1, 0.9), unmeasured="drop") == [1, 2]
    assert tasks_with_signal(EvalResult.read(tmp_path), pass_rate=(0.0, 1.0), unmeasured="keep") == [
        0,
        1,
        2,
        3,
        4,
    ]


def test_tasks_without_a_pass_rate_are_an_error_naming_them_unless_kept_or_dropped(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(IDS)}).url
    results = evaluated(url, tmp_path)
    env = open_env(url)

    with pytest.raises(EvalResultsError) as refused:
        env.dataset_for("train", pass_rate=(0.1, 0.9), results=results)

    assert "1 task has no pass rate for split 'train'" in str(refused.value)
    assert "unreachable" in str(refused.value) and "unmeasured='keep'" in str(refused.value)
    kept = env.dataset_for("train", pass_rate=(0.1, 0.9), results=results, unmeasured="keep")
    assert prompts(kept) == ["often", "sometimes", "unreachable"]


def test_tasks_the_results_lack_are_named_as_never_evaluated(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(IDS)}).url
    full = EvalResult.read(evaluated(url, tmp_path))
    trimmed = full.model_copy(update={"tasks": full.tasks[:2]})
    env = open_env(url)

    with pytest.raises(EvalResultsError) as refused:
        env.dataset_for("train", pass_rate=(0.1, 0.9), results=trimmed)

    assert "3 tasks have no pass rate for split 'train' in the eval results given" in str(refused.value)
    assert "sometimes (never evaluated), never (never evaluated), unreachable (never evaluated)" in str(
        refused.value
    )


def test_results_of_another_bundle_are_an_error_naming_both_fingerprints(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    measured = serve({"train": outcome_tasks(IDS)})
    results = evaluated(measured.url, tmp_path)
    env = open_env(serve({"train": outcome_tasks([*IDS[:4], "renamed"])}).url)
    written = EvalResult.read(results).tasks_fingerprint

    with pytest.raises(EvalResultsError) as refused:
        env.dataset_for("train", pass_rate=(0.1, 0.9), results=results, unmeasured="drop")

    message = str(refused.value)
    assert written is not None and written in message
    assert env._api.fingerprint is not None and env._api.fingerprint in message
    assert "agent-env eval" in message


def test_results_of_another_split_are_an_error_naming_both(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(IDS), "eval": outcome_tasks(IDS)}).url
    results = evaluated(url, tmp_path, split="eval")
    env = open_env(url)

    with pytest.raises(EvalResultsError, match="are of split 'eval', not 'train'"):
        env.dataset_for("train", pass_rate=(0.1, 0.9), results=results, unmeasured="drop")


def test_bounds_no_task_falls_within_are_an_error_saying_how_many_fell_below_and_above(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(IDS)}).url
    results = evaluated(url, tmp_path)

    with pytest.raises(ValueError, match=r"within \[0.4, 0.7\] \(2 of its 4 measured tasks below, 2 above\)"):
        open_env(url).dataset_for("train", pass_rate=(0.4, 0.7), results=results, unmeasured="drop")


@pytest.mark.parametrize("pass_rate", [(0.9, 0.1), (-0.1, 0.5), (0.5, 1.5), (0.5,)])
def test_bounds_that_are_not_low_and_high_within_0_and_1_are_refused(
    pass_rate: tuple[float, float], serve: Serve, tmp_path: Path
) -> None:
    results = evaluated(serve({"train": outcome_tasks(IDS)}).url, tmp_path)

    with pytest.raises(ValueError, match="pass_rate must be"):
        tasks_with_signal(results, pass_rate=pass_rate)


def test_a_path_that_holds_no_results_says_how_to_write_them(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="agent-env eval"):
        tasks_with_signal(tmp_path / "results.json", pass_rate=(0.1, 0.9))


def test_a_task_scoring_0_03_to_0_11_has_pass_rate_0_and_is_kept_by_score_std_dropped_by_pass_rate(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(PARTIAL_IDS)}).url
    results = evaluated_partly(url, tmp_path)
    env = open_env(url)

    by_spread = env.dataset_for("train", results=results, score_std=(0.01, None), unmeasured="drop")
    by_pass_rate = env.dataset_for("train", results=results, pass_rate=(0.01, 0.99), unmeasured="drop")

    task = EvalResult.read(results).tasks[0]
    assert (task.id, task.pass_rate, task.min_score, task.max_score) == ("partial", 0.0, 0.03, 0.11)
    assert prompts(by_spread) == ["partial", "solved"]
    assert prompts(by_pass_rate) == ["solved"]


def test_score_std_and_mean_score_together_keep_the_tasks_within_both(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(PARTIAL_IDS)}).url
    results = evaluated_partly(url, tmp_path)

    rows = open_env(url).dataset_for(
        "train", results=results, score_std=(0.01, None), mean_score=(None, 0.5), unmeasured="drop"
    )

    assert prompts(rows) == ["partial"]
    assert tasks_with_signal(results, mean_score=(0.04, 0.8), unmeasured="drop") == [0, 1, 2]


def test_pass_rate_bounds_choose_the_same_tasks_as_before_the_spread_was_recorded(
    serve: Serve, tmp_path: Path
) -> None:
    results = evaluated(serve({"train": outcome_tasks(IDS)}).url, tmp_path)
    older = json.loads(results.read_text())
    for task in older["tasks"]:
        del task["score_std"], task["min_score"], task["max_score"]
    results.write_text(json.dumps(older))

    assert tasks_with_signal(results, pass_rate=(0.1, 0.9), unmeasured="drop") == [1, 2]
    assert tasks_with_signal(results, mean_score=(0.1, 0.9), unmeasured="drop") == [1, 2]


def test_selecting_by_score_std_from_results_json_written_before_it_was_recorded_says_to_evaluate_again(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(PARTIAL_IDS)}).url
    results = evaluated_partly(url, tmp_path)
    older = json.loads(results.read_text())
    for task in older["tasks"]:
        del task["score_std"]
    results.write_text(json.dumps(older))

    with pytest.raises(EvalResultsError) as refused:
        open_env(url).dataset_for("train", results=results, score_std=(0.01, None), unmeasured="drop")

    message = str(refused.value)
    assert "hold no score_std" in message and "older" in message
    assert "evaluate again (`agent-env eval BUNDLE_OR_URL --split train -n K --out FOLDER`)" in message


def test_no_task_within_several_bounds_says_how_many_fell_below_and_above_each(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(PARTIAL_IDS)}).url
    results = evaluated_partly(url, tmp_path)

    with pytest.raises(ValueError) as refused:
        open_env(url).dataset_for(
            "train", results=results, score_std=(0.1, None), mean_score=(0.05, 0.5), unmeasured="drop"
        )

    assert str(refused.value) == (
        "no task of split 'train' has a score spread of at least 0.1 and a mean score within [0.05, 0.5] "
        "(of its 3 measured tasks, score_std: 2 below, 0 above; mean_score: 0 below, 1 above): widen "
        "score_std or mean_score, or train on the split as it is"
    )


def test_tasks_without_a_score_spread_are_an_error_naming_them_unless_kept_or_dropped(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(PARTIAL_IDS)}).url
    results = evaluated_partly(url, tmp_path)

    with pytest.raises(EvalResultsError, match=r"1 task has no score spread for split 'train'.*unreachable"):
        open_env(url).dataset_for("train", results=results, score_std=(0.01, None))


@pytest.mark.parametrize(
    ("bounds", "says"),
    [
        ({"score_std": (None, None)}, r"score_std=\(None, None\) bounds nothing: give a low, a high or both"),
        ({"score_std": (0.5, 0.1)}, r"low <= high, got \(0.5, 0.1\): swap them, score_std=\(0.1, 0.5\)"),
        ({"mean_score": (-0.1, None)}, r"mean_score must be \(low, high\), each a number from 0 to 1 or"),
        ({"mean_score": (0.1,)}, r"mean_score must be \(low, high\)"),
    ],
)
def test_bounds_that_are_not_low_and_high_within_0_and_1_say_how_to_write_them(
    bounds: dict[str, tuple[float | None, ...]], says: str, serve: Serve, tmp_path: Path
) -> None:
    results = evaluated_partly(serve({"train": outcome_tasks(PARTIAL_IDS)}).url, tmp_path)

    with pytest.raises(ValueError, match=says):
        tasks_with_signal(results, **bounds)  # type: ignore[arg-type]


def test_results_without_bounds_or_bounds_without_results_say_what_to_pass(
    serve: Serve, open_env: Open, tmp_path: Path
) -> None:
    url = serve({"train": outcome_tasks(PARTIAL_IDS)}).url
    results = evaluated_partly(url, tmp_path)
    env = open_env(url)

    with pytest.raises(ValueError, match=r"with score_std=\(0.01, None\) \(the tasks whose samples differ"):
        env.dataset_for("train", results=results)
    with pytest.raises(ValueError, match=r"score_std needs results=: the results.json of `agent-env eval"):
        env.dataset_for("train", score_std=(0.01, None))
    with pytest.raises(ValueError, match=r"tasks_with_signal needs bounds to select by: score_std=\(0.01"):
        tasks_with_signal(results)
