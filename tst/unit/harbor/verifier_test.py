"""The score a Harbor task's test.sh leaves: reward.json over reward.txt, each named reward a component,
and every reward that is not a finite number refused (the episode is then unscorable, never 0)."""

from __future__ import annotations

import pytest

from agent_env.harbor.verifier import judge
from agent_env.verifiers import Judgement


def test_reward_txt_s_number_is_the_score():
    assert judge(None, "0.75\n") == Judgement(0.75)


def test_reward_json_takes_precedence_and_its_reward_key_is_the_score_with_every_named_number_a_component():
    judged = judge('{"reward": 0.5, "tests_passed": 3, "style": 1.0, "note": "x", "flag": true}', "1")

    assert judged == Judgement(0.5, {"reward": 0.5, "tests_passed": 3.0, "style": 1.0})


def test_reward_json_without_a_reward_key_takes_reward_txt_s_number_else_the_mean_of_its_numbers():
    assert judge('{"a": 1, "b": 0}', "0.25") == Judgement(0.25, {"a": 1.0, "b": 0.0})
    assert judge('{"a": 1, "b": 0}', None) == Judgement(0.5, {"a": 1.0, "b": 0.0})


@pytest.mark.parametrize(
    ("as_json", "as_text", "why"),
    [
        (None, None, "test.sh wrote neither /logs/verifier/reward.txt nor /logs/verifier/reward.json"),
        (None, "", "/logs/verifier/reward.txt is empty"),
        (None, "  \n", "/logs/verifier/reward.txt is empty"),
        (None, "passed", "/logs/verifier/reward.txt is not a number: 'passed'"),
        (None, "nan", "/logs/verifier/reward.txt is not a finite number: 'nan'"),
        (None, "inf", "/logs/verifier/reward.txt is not a finite number: 'inf'"),
        ("", "1", "/logs/verifier/reward.json is empty"),
        ("{", "1", "/logs/verifier/reward.json is not JSON: '{'"),
        ("[1]", "1", "/logs/verifier/reward.json is not an object of named rewards: '[1]'"),
        ('{"note": "ok"}', "1", "/logs/verifier/reward.json names no numeric reward"),
        ('{"reward": NaN}', "1", "/logs/verifier/reward.json's reward is not a finite number"),
    ],
)
def test_a_reward_that_is_missing_empty_not_a_number_or_not_finite_gives_no_score(as_json, as_text, why):
    with pytest.raises(ValueError) as refused:
        judge(as_json, as_text)

    assert str(refused.value).startswith(why)
