"""The score a Harbor task's test.sh leaves: reward.json over reward.txt, each named reward a component,
and every reward that is not a finite number refused (the episode is then unscorable, never 0); the
end of test.sh's output beside every score, and in an unscorable episode's error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_env._contracts.sandbox import CommandResult
from agent_env._error_types import EpisodeError
from agent_env._verifiers import ItemsCheck, Judgement
from agent_env.harbor._verifier import TEST_SCRIPT, HarborTests, judge


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


# test.sh's output: its end kept in every judgement, and in the error of an unscorable episode


class Sandbox:
    """A scoring context whose sandbox answers the verifier's commands as a container would: the
    copy of tests/ succeeds, test.sh prints `printed` (its run answers with its output's end, as the
    `tail` after it does), and the reward files hold what is given (None: not written)."""

    def __init__(
        self, printed: str, *, reward_txt: str | None = None, reward_json: str | None = None, hangs=False
    ) -> None:
        self.printed, self.hangs = printed, hangs
        self.files = {"reward.txt": reward_txt, "reward.json": reward_json}
        self.commands: list[str] = []

    @property
    def reply(self) -> str:
        return ""

    async def items(self, check: ItemsCheck) -> Any:
        raise AssertionError("a Harbor task's verifier reads no items")

    async def bash(self, command: str, timeout_s: float = 30.0) -> CommandResult:
        self.commands.append(command)
        if TEST_SCRIPT in command:
            return CommandResult(None, "", timed_out=True) if self.hangs else CommandResult(0, self.printed)
        if command.startswith("tail "):
            return CommandResult(0, self.printed)
        for name, text in self.files.items():
            if f"/logs/verifier/{name}" in command:
                return CommandResult(3, "") if text is None else CommandResult(0, text)
        return CommandResult(0, "")


def harbor_tests(timeout_s: float = 60.0) -> HarborTests:
    return HarborTests(
        task="fetch-uv", files={"test.sh": b"#!/bin/bash\n"}, timeout_s=timeout_s, workdir="/app"
    )


PYTEST_RUN = "".join(f"\x1b[32mtest_outputs.py::test_{n} PASSED\x1b[0m\r\n" for n in range(1, 301))


def test_a_0_from_a_test_sh_that_could_not_fetch_its_tools_keeps_what_it_said_in_the_judgement():
    printed = (
        "\x1b[1mInstalling uv\x1b[0m\r\n"
        "curl: (6) Could not resolve host: astral.sh\r\n"
        "/tests/test.sh: line 4: uvx: command not found\n"
    )

    judged = asyncio.run(harbor_tests()(Sandbox(printed, reward_txt="0")))

    assert judged == Judgement(
        0.0,
        detail=(
            "Installing uv\n"
            "curl: (6) Could not resolve host: astral.sh\n"
            "/tests/test.sh: line 4: uvx: command not found"
        ),
    )


def test_a_test_sh_that_passes_keeps_its_last_50_lines_beside_its_named_rewards():
    sandbox = Sandbox(PYTEST_RUN, reward_json='{"reward": 1, "passed": 300}')

    judged = asyncio.run(harbor_tests()(sandbox))

    assert (judged.score, judged.components) == (1.0, {"reward": 1.0, "passed": 300.0})
    assert judged.detail.splitlines() == [f"test_outputs.py::test_{n} PASSED" for n in range(251, 301)]
    assert sum(TEST_SCRIPT in command for command in sandbox.commands) == 1
    assert not any(command.startswith("tail ") for command in sandbox.commands)


def test_an_unscorable_episode_s_error_ends_with_test_sh_s_last_20_lines():
    with pytest.raises(EpisodeError) as unscorable:
        asyncio.run(harbor_tests()(Sandbox(PYTEST_RUN + "writing no reward\n")))

    message = unscorable.value.message
    assert unscorable.value.code == "VERIFIER_FAILED"
    head, said = message.split("; test.sh's output ends:\n")
    assert head == (
        "task 'fetch-uv' is unscorable: test.sh wrote neither /logs/verifier/reward.txt nor "
        "/logs/verifier/reward.json"
    )
    assert said.splitlines() == [
        *(f"  test_outputs.py::test_{n} PASSED" for n in range(282, 301)),
        "  writing no reward",
        "(an unscorable episode has no reward, never 0)",
    ]


def test_a_test_sh_past_its_timeout_is_unscorable_with_what_it_had_printed():
    with pytest.raises(EpisodeError) as unscorable:
        asyncio.run(
            harbor_tests(timeout_s=2)(Sandbox("\x1b[33mwaiting for the server...\x1b[0m\n", hangs=True))
        )

    assert unscorable.value.message == (
        "task 'fetch-uv' is unscorable: tests/test.sh ran past its [verifier] timeout_sec of 2 s; "
        "test.sh's output ends:\n  waiting for the server...\n(an unscorable episode has no reward, never 0)"
    )


def test_an_unscorable_episode_whose_test_sh_printed_nothing_says_why_in_one_line():
    with pytest.raises(EpisodeError) as unscorable:
        asyncio.run(harbor_tests()(Sandbox("\n", reward_txt="passed")))

    assert unscorable.value.message == (
        "task 'fetch-uv' is unscorable: /logs/verifier/reward.txt is not a number: 'passed' "
        "(an unscorable episode has no reward, never 0)"
    )
