"""`EvalResult`: what `agent-env eval --out` wrote, read back as a trainer reads it, by this version and
by those before it."""

from __future__ import annotations

import json

import pytest

from agent_env.eval import RESULTS_FILE, EvalResult, evaluate
from tst.support.outcomes import OutcomePolicy, outcome_tasks

pytestmark = pytest.mark.needs("eval_installed")

NEW_FIELDS = ("score_std", "min_score", "max_score")


def test_results_json_written_before_the_spread_was_recorded_still_reads_with_no_spread(serve, tmp_path):
    url = serve({"eval": outcome_tasks(["partial"])}).url
    evaluate(url, OutcomePolicy({"partial": [0.03, 0.11]}), samples=2, out=tmp_path)
    written = json.loads((tmp_path / RESULTS_FILE).read_text())
    for task in written["tasks"]:
        for field in NEW_FIELDS:
            del task[field]
    (tmp_path / RESULTS_FILE).write_text(json.dumps(written))

    task = EvalResult.read(tmp_path).tasks[0]

    assert (task.mean_score, task.pass_rate) == (pytest.approx(0.07), 0.0)
    assert (task.score_std, task.min_score, task.max_score) == (None, None, None)
