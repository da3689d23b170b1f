"""A judge's answer is read strictly: one JSON object with a reason and an integer score on the scale,
nothing around it, no other key, no key twice; a group's, exactly one such verdict per transcript's
id; anything else is no verdict, saying what it was."""

from __future__ import annotations

import json

import pytest

from agent_env._contracts.judges import JudgeScale
from agent_env.judges._verdict import MAX_REASON_CHARS, Verdict, VerdictError, read_verdict, read_verdicts
from tst.support.judge_answers import GARBAGE

SCALE = JudgeScale(min=1, max=5)


def refused(content: str | None) -> VerdictError:
    with pytest.raises(VerdictError) as caught:
        read_verdict(content, SCALE)
    return caught.value


def test_a_json_object_with_a_reason_and_a_score_on_the_scale_is_a_verdict():
    assert read_verdict(' {"reason": " Polite and right. ", "score": 4}\n', SCALE) == Verdict(
        4, "Polite and right."
    )


def test_a_score_written_as_a_whole_float_is_the_same_integer():
    assert read_verdict('{"score": 5.0, "reason": "ok"}', SCALE).score == 5


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("prose", "answered no JSON object"),
        ("fenced", "answered no JSON object"),
        ("missing-score", "answered no 'score'"),
        ("extra-field", "answered 'override' too"),
        ("string-score", 'answered the score "7", not an integer'),
        ("repeated-key", "the key 'score' twice"),
        ("empty", "answered no text"),
    ],
)
def test_anything_but_the_verdict_object_alone_is_unreadable_saying_what_it_was(kind: str, said: str):
    error = refused(GARBAGE[kind])

    assert error.kind == "unreadable"
    assert said in str(error)


@pytest.mark.parametrize("content", ['{"reason": "x", "score": 7.5}', '{"reason": "x", "score": true}'])
def test_a_score_that_is_no_integer_is_unreadable(content: str):
    assert refused(content).kind == "unreadable"


@pytest.mark.parametrize("content", ['{"reason": "x", "score": NaN}', "[4]", '"4"', "null"])
def test_json_that_is_not_an_object_or_not_strict_json_is_unreadable(content: str):
    assert refused(content).kind == "unreadable"


@pytest.mark.parametrize("score", [0, 6, -3])
def test_a_score_off_the_scale_is_off_scale_naming_the_scale(score: int):
    error = refused(f'{{"reason": "x", "score": {score}}}')

    assert error.kind == "off_scale"
    assert f"the score {score}, off its scale of 1 to 5" in str(error)


def test_a_reason_past_its_bound_is_kept_cut():
    reason = read_verdict(f'{{"reason": "{"a" * 5000}", "score": 3}}', SCALE).reason

    assert len(reason) < MAX_REASON_CHARS + 20 and reason.endswith("[... cut]")


def test_a_long_unreadable_answer_is_quoted_only_in_part():
    assert len(str(refused("x" * 10_000))) < 400


def group(*entries: object) -> str:
    return json.dumps({"verdicts": list(entries)})


def test_a_group_s_answer_is_one_verdict_per_transcript_in_the_order_of_their_ids():
    answer = group({"id": 2, "reason": "curt", "score": 2}, {"score": 5, "reason": "best", "id": 1})

    assert read_verdicts(answer, SCALE, 2) == [Verdict(5, "best"), Verdict(2, "curt")]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (group({"id": 1, "reason": "a", "score": 5}), "answered 1 verdicts for 2 transcripts"),
        (
            group({"id": 1, "reason": "a", "score": 5}, {"id": 1, "reason": "b", "score": 2}),
            "two verdicts for transcript 1",
        ),
        (
            group({"id": 1, "reason": "a", "score": 5}, {"id": 3, "reason": "b", "score": 2}),
            "the id 3, not one of 1 to 2",
        ),
        (group({"id": 1, "reason": "a", "score": 5}, {"reason": "b", "score": 2}), "a verdict without an id"),
        (
            group({"id": 1, "reason": "a", "score": 5}, {"id": 2, "reason": "b", "score": 2, "x": 1}),
            "for transcript 2 'x' too",
        ),
        ('{"verdicts": "all fine"}', "answered str for 2 transcripts"),
        ('{"reason": "a", "score": 5}', "answered no 'verdicts', 'reason' too, 'score' too"),
    ],
)
def test_a_group_s_answer_that_is_not_exactly_one_verdict_per_id_is_no_verdict_saying_why(
    answer: str, said: str
):
    with pytest.raises(VerdictError) as caught:
        read_verdicts(answer, SCALE, 2)
    assert caught.value.kind == "unreadable" and said in str(caught.value)


def test_a_score_off_the_scale_in_a_group_names_its_transcript():
    answer = group({"id": 1, "reason": "a", "score": 5}, {"id": 2, "reason": "b", "score": 9})

    with pytest.raises(VerdictError) as caught:
        read_verdicts(answer, SCALE, 2)
    assert caught.value.kind == "off_scale"
    assert "for transcript 2 the score 9, off its scale of 1 to 5" in str(caught.value)
