"""Verifiers: how a finished episode is scored, by each built-in check and by a bundle's function."""

import asyncio
import contextlib
import math

import pytest
from pydantic import ValidationError

from agent_env import Agent, Env, EpisodeError, LocalSandboxProvider, Task, Toolset, VerifierContext
from agent_env._verifiers import (
    VERIFIER_TYPES,
    BashCheck,
    FunctionCheck,
    ItemsCheck,
    Judgement,
    ReplyCheck,
    Verifier,
    aggregate,
    score_items,
    score_reply,
)

TASK = Task(
    id="stack-crates",
    split="train",
    index=0,
    agent=Agent("deckhand", ()),
    turns=("Stack the crates.",),
    toolset=Toolset(()),
    verifiers=(),
)


def run(coroutine):
    """Run a coroutine to its end, failing instead of hanging past a bound."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout=30))


def context(envs=None, replies=("Done.",), sandbox=None) -> VerifierContext:
    return VerifierContext(task=TASK, envs=envs or {}, replies=tuple(replies), sandbox=sandbox)


def score(spec, function=None, **context_options) -> float:
    return run(Verifier(spec, function).score(context(**context_options)))


def failed(spec, function=None, **context_options) -> EpisodeError:
    """The VERIFIER_FAILED error that scoring `spec` gives."""
    with pytest.raises(EpisodeError) as caught:
        score(spec, function, **context_options)
    assert caught.value.code == "VERIFIER_FAILED"
    return caught.value


def items(expected, match="exact", partial=False) -> ItemsCheck:
    return ItemsCheck(type="items", env="dock", expected=expected, match=match, partial=partial)


def reply(**test) -> ReplyCheck:
    return ReplyCheck(type="reply", **test)


def function(name: str, **args) -> FunctionCheck:
    return FunctionCheck(type="function", function=name, args=args)


class Crates(Env):
    def __init__(self, crates):
        self.crates = crates

    def items(self):
        return self.crates


C1 = {"crate": "C1", "bay": 1}
C2 = {"crate": "C2", "bay": 2}
C3 = {"crate": "C3", "bay": 3}


# Items


def test_exact_items_score_one_in_any_order():
    assert score_items(items([C1, C2, C3]), [C3, C1, C2]) == 1.0


def test_items_compare_dicts_whatever_the_order_of_their_keys():
    assert score_items(items([{"crate": "C1", "bay": 1}]), [{"bay": 1, "crate": "C1"}]) == 1.0


@pytest.mark.parametrize("actual", [[C1], [C1, C2, C3], [C1, C3]], ids=["missing", "extra", "other"])
def test_exact_items_score_zero_when_one_is_missing_extra_or_different(actual):
    assert score_items(items([C1, C2]), actual) == 0.0


def test_includes_scores_one_when_every_expected_item_is_there_among_others():
    assert score_items(items([C1, C2], match="includes"), [C3, C2, C1]) == 1.0


def test_includes_scores_zero_when_an_expected_item_is_missing():
    assert score_items(items([C1, C2], match="includes"), [C1, C3]) == 0.0


def test_partial_exact_credit_is_the_share_matched_of_the_larger_of_expected_and_found():
    assert score_items(items([C1, C2], partial=True), [C1, C3]) == 0.5
    assert score_items(items([C1, C2], partial=True), [C1, C2, C3, {"crate": "C4"}]) == 0.5


def test_partial_includes_credit_is_the_share_of_expected_items_found():
    assert score_items(items([C1, C2, C3], match="includes", partial=True), [C3, {"crate": "C9"}]) == 1 / 3


def test_duplicates_count_as_a_multiset():
    assert score_items(items([C1, C1]), [C1]) == 0.0
    assert score_items(items([C1, C1], partial=True), [C1]) == 0.5
    assert score_items(items([C1], match="includes"), [C1, C1]) == 1.0


def test_no_items_expected_and_none_found_scores_one():
    assert score_items(items([], partial=True), []) == 1.0


@pytest.mark.parametrize("actual", [{"C1": 1}, "C1", None, 3])
def test_items_that_are_not_a_list_fail_the_verifier_naming_the_env(actual):
    with pytest.raises(EpisodeError) as caught:
        score_items(items([C1]), actual)

    assert caught.value.code == "VERIFIER_FAILED"
    assert caught.value.message == f"env 'dock' items() returned {type(actual).__name__}, not a list"


def test_an_items_verifier_scores_the_items_of_its_env_in_the_episode():
    assert score(items([C1, C2]), envs={"dock": Crates([C2, C1])}) == 1.0


# Reply


@pytest.mark.parametrize(
    ("test", "text", "expected"),
    [
        ({"equals": "Bay 3"}, "  Bay 3\n", 1.0),
        ({"equals": " Bay 3 "}, "Bay 3", 1.0),
        ({"equals": "Bay 3"}, "bay 3", 0.0),
        ({"equals": "Bay 3"}, "Bay 3.", 0.0),
        ({"equals": "Bay 3", "ignore_case": True}, "BAY 3", 1.0),
        ({"contains": "bay 3"}, "The crate is in bay 3.", 1.0),
        ({"contains": "bay 3"}, "The crate is in Bay 3.", 0.0),
        ({"contains": "bay 3", "ignore_case": True}, "The crate is in BAY 3.", 1.0),
        ({"matches": r"bay \d"}, "moved to bay 4", 1.0),
        ({"matches": r"^moved"}, "  moved to bay 4", 1.0),
        ({"matches": r"bay \d$"}, "moved to bay 4\n", 1.0),
        ({"matches": r"bay \d"}, "moved to BAY 4", 0.0),
        ({"matches": r"bay \d", "ignore_case": True}, "moved to BAY 4", 1.0),
    ],
)
def test_a_reply_check_tests_the_stripped_reply(test, text, expected):
    assert score_reply(reply(**test), text) == expected


def test_a_reply_verifier_checks_the_reply_that_ended_the_last_turn():
    assert score(reply(equals="Done."), replies=("Started.", "Done.")) == 1.0
    assert score(reply(equals="Started."), replies=("Started.", "Done.")) == 0.0


@pytest.mark.parametrize("tests", [{}, {"equals": "a", "contains": "a"}, {"contains": "a", "matches": "a"}])
def test_a_reply_check_refuses_anything_but_exactly_one_test(tests):
    with pytest.raises(ValidationError) as caught:
        reply(**tests)

    assert "give exactly one of 'equals', 'contains' or 'matches'" in str(caught.value)


def test_a_reply_check_refuses_a_bad_regular_expression():
    with pytest.raises(ValidationError) as caught:
        reply(matches="bay (")

    assert "'matches' is not a valid regular expression" in str(caught.value)
    assert "missing )" in str(caught.value)


# Aggregate


def test_the_mean_is_weighted():
    assert aggregate([(1.0, 3.0), (0.0, 1.0)], "mean") == 0.75


def test_a_zero_weight_verifier_does_not_count_in_the_mean():
    assert aggregate([(1.0, 1.0), (0.0, 0.0)], "mean") == 1.0


def test_the_mean_of_verifiers_that_all_weigh_zero_is_zero():
    assert aggregate([(1.0, 0.0), (1.0, 0.0)], "mean") == 0.0


def test_all_pass_is_one_only_when_every_verifier_gives_one():
    assert aggregate([(1.0, 1.0), (1.0, 2.0)], "all_pass") == 1.0
    assert aggregate([(1.0, 1.0), (0.99, 2.0)], "all_pass") == 0.0


def test_a_negative_weight_is_refused():
    with pytest.raises(ValidationError) as caught:
        reply(equals="a", weight=-1)

    assert "weight" in str(caught.value)


# Function


@pytest.mark.parametrize(("value", "expected"), [(True, 1.0), (False, 0.0), (0.25, 0.25), (1, 1.0), (0, 0.0)])
def test_a_function_verifier_scores_a_bool_or_a_number_in_range(value, expected):
    assert score(function("check"), lambda context: value) == expected


@pytest.mark.parametrize("value", [1.5, -0.1, math.nan, "1", None])
def test_a_function_verifier_returning_anything_else_fails_naming_the_function(value):
    error = failed(function("crates_stacked"), lambda context: value)

    assert error.message == (
        f"verifier function 'crates_stacked' returned {value!r}; return a number in [0, 1] or a bool"
    )


def test_a_function_verifier_gets_the_context_and_its_args():
    seen = {}

    def crates_in_bay(context, bay, at_least):
        seen.update(task=context.task.id, reply=context.reply, bay=bay, at_least=at_least)
        return True

    assert score(function("crates_in_bay", bay=3, at_least=2), crates_in_bay, replies=("Stacked.",)) == 1.0
    assert seen == {"task": "stack-crates", "reply": "Stacked.", "bay": 3, "at_least": 2}


def test_an_async_function_verifier_is_awaited():
    async def stacked(context, share):
        return share

    assert score(function("stacked", share=0.5), stacked) == 0.5


# Bash


@contextlib.asynccontextmanager
async def sandbox(files):
    box = await LocalSandboxProvider().create(files)
    try:
        yield box
    finally:
        await box.teardown()


def bash_score(command: str, files=None) -> tuple[float, bool]:
    """The score of a bash check in a fresh local sandbox, and whether that sandbox is gone after."""

    async def main():
        async with sandbox(files or {}) as box:
            result = await Verifier(BashCheck(type="bash", command=command)).score(context(sandbox=box))
        return result, not box.root.exists()

    return run(main())


def test_a_bash_check_whose_command_exits_zero_scores_one():
    assert bash_score("grep -q C1 manifest.csv", {"manifest.csv": b"crate,bay\nC1,3\n"}) == (1.0, True)


def test_a_bash_check_whose_command_exits_non_zero_scores_zero():
    assert bash_score("exit 1") == (0.0, True)


def test_a_bash_check_past_its_deadline_scores_zero():
    async def main():
        async with sandbox({}) as box:
            check = BashCheck(type="bash", command="while true; do :; done", timeout_s=0.2)
            return await Verifier(check).score(context(sandbox=box))

    assert run(main()) == 0.0


def bash_judgement(command: str) -> Judgement:
    async def main():
        async with sandbox({}) as box:
            return await Verifier(BashCheck(type="bash", command=command)).judge(context(sandbox=box))

    return run(main())


def test_a_bash_check_keeps_the_end_of_its_command_s_output_and_its_exit_code_when_it_fails():
    printed = (
        "for n in $(seq 1 80); do echo checked $n; done; printf '\\033[31mtotal.txt is empty\\033[0m\\n'"
    )

    passed, failed_ = bash_judgement(printed), bash_judgement(printed + "; exit 3")

    assert passed.score == 1.0 and failed_.score == 0.0
    assert passed.detail.splitlines() == [*(f"checked {n}" for n in range(32, 81)), "total.txt is empty"]
    assert failed_.detail.splitlines()[-2:] == ["total.txt is empty", "[exit code: 3]"]
    assert bash_judgement("true") == Judgement(1.0)


def test_a_bash_check_without_a_sandbox_fails_naming_the_task():
    error = failed(BashCheck(type="bash", command="true"))

    assert error.message == "task 'stack-crates' has no sandbox to run bash in"


def test_the_verifier_types_a_task_may_name_are_read_from_the_checks_themselves():
    assert VERIFIER_TYPES == ("items", "bash", "reply", "function", "judge")
