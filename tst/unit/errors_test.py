"""One error vocabulary: the codes the code raises, `ErrorCode` and the README's table are one set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from agent_env import AgentEnvError, EpisodeError, ErrorCode
from agent_env.errors import validation_problems

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "agent_env").rglob("*.py"))


def readme_table_codes() -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| code | when | episode |") :].split("\n\n", 1)[0]
    first_cells = [line.split("|")[1] for line in table.splitlines()[2:] if line.strip().startswith("|")]
    return {code for cell in first_cells for code in re.findall(r"`([A-Z_]+)`", cell)}


def test_every_code_the_code_raises_is_an_error_code_and_every_error_code_is_raised_somewhere():
    used = {
        name for path in SOURCES for name in re.findall(r"\bErrorCode\.([A-Z_]+)", path.read_text("utf-8"))
    }
    literal = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in SOURCES
        for found in re.findall(r"(?:Error|_error)\(\s*\"[A-Z_]{4,}\"", path.read_text("utf-8"))
    ]

    assert used == {code.name for code in ErrorCode}
    assert literal == []


def test_the_readme_s_table_lists_every_error_code_and_no_other():
    assert readme_table_codes() == {code.value for code in ErrorCode}


def test_an_error_code_is_its_own_name_as_a_string_with_its_meaning():
    assert ErrorCode.DEADLINE_EXCEEDED == "DEADLINE_EXCEEDED"
    assert f"{ErrorCode.TOOL_ERROR}" == "TOOL_ERROR"
    assert ErrorCode.DEADLINE_EXCEEDED.ends_episode and not ErrorCode.TOOL_ERROR.ends_episode
    assert all(code.meaning for code in ErrorCode)


def test_every_error_with_a_code_is_an_agent_env_error_shown_with_its_code():
    error = EpisodeError(ErrorCode.NO_OPEN_TURN, "no turn is open")

    assert isinstance(error, AgentEnvError)
    assert (error.code, error.message, str(error)) == (
        "NO_OPEN_TURN",
        "no turn is open",
        "no turn is open (code: NO_OPEN_TURN)",
    )


class _Crate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    bay: int


@pytest.mark.parametrize(
    ("data", "sentence"),
    [
        ({"bay": 2}, "argument 'label' is required"),
        (
            {"label": "C1", "bay": "two"},
            "argument 'bay': Input should be a valid integer, unable to parse string as an integer "
            '(got "two")',
        ),
        (
            {"label": "C1", "bay": 2, "colour": "red"},
            "argument 'colour' is unknown (arguments: label, bay); remove it or check its spelling",
        ),
    ],
    ids=["missing", "wrong type", "unknown"],
)
def test_what_pydantic_finds_wrong_is_worded_once_naming_the_argument_and_the_fix(
    data: dict[str, object], sentence: str
):
    with pytest.raises(ValidationError) as caught:
        _Crate.model_validate(data)

    assert validation_problems(caught.value, noun="argument", known=["label", "bay"]) == [sentence]
