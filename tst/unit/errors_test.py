"""One error vocabulary: the codes the code raises, `ErrorCode` and the documented table
(docs/reference/errors.md) are one set."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

import agent_env
from agent_env import AgentEnvError, BundleError, EpisodeError, ErrorCode, load_bundle
from agent_env._error_types import validation_problems
from tst.support.bundles import make_bundle
from tst.util import capabilities

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "agent_env").rglob("*.py"))


def documented_table_codes() -> set[str]:
    page = (ROOT / "docs" / "reference" / "errors.md").read_text(encoding="utf-8")
    table = page[page.index("| code | when | episode |") :].split("\n\n", 1)[0]
    first_cells = [line.split("|")[1] for line in table.splitlines()[2:] if line.strip().startswith("|")]
    return {code for cell in first_cells for code in re.findall(r"`([A-Z_]+)`", cell)}


def test_every_code_the_code_raises_is_an_error_code_and_every_error_code_is_raised_somewhere():
    used = {
        name for path in SOURCES for name in re.findall(r"\bErrorCode\.([A-Z_]+)", path.read_text("utf-8"))
    }
    literal = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in SOURCES
        for found in re.findall(r"(?:Error\(|_error\(|code=)\s*\"[A-Z_]{4,}\"", path.read_text("utf-8"))
    ]

    assert used == {code.name for code in ErrorCode}
    assert literal == []


def every_error_class_the_library_defines() -> list[type[BaseException]]:
    """Each exception class defined in a module of agent_env, every module imported first
    (`__main__` modules left out: importing one runs the command)."""
    for found in pkgutil.walk_packages(agent_env.__path__, "agent_env."):
        if not found.name.endswith(".__main__"):
            importlib.import_module(found.name)
    seen: set[type[BaseException]] = set()
    todo: list[type[BaseException]] = [Exception]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return sorted(
        (c for c in seen if c.__module__.startswith("agent_env") and not issubclass(c, Warning)),
        key=lambda c: f"{c.__module__}.{c.__qualname__}",
    )


@pytest.mark.needs(*capabilities.PACKAGE_EXTRAS)
def test_every_error_the_library_defines_derives_from_agent_env_error() -> None:
    defined = every_error_class_the_library_defines()
    offenders = [f"{c.__module__}.{c.__qualname__}" for c in defined if not issubclass(c, AgentEnvError)]

    assert len(defined) > 30
    assert offenders == [], f"not AgentEnvErrors: {', '.join(offenders)}"


BARE_ERRORS = {
    "Exception",
    "ValueError",
    "TypeError",
    "RuntimeError",
    "KeyError",
    "IndexError",
    "LookupError",
}
"""The built-in errors the library never raises bare: it raises `ArgumentError` (a ValueError),
`ArgumentTypeError` (a TypeError), `StateError` (a RuntimeError) or its own. Built-ins that are a
protocol stay: AttributeError from a module's `__getattr__`, NotImplementedError from a base's method,
ImportError for a missing extra (at import), and what the operating system or a deadline says
(FileNotFoundError, ProcessLookupError, TimeoutError), which callers catch by those names."""


def bare_built_in_raises(package: Path) -> list[str]:
    """Each `raise X(...)` (or `raise X`) in `package` whose X is one of BARE_ERRORS, as `file:line X`."""
    found = []
    for file in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            raised = node.exc if isinstance(node, ast.Raise) else None
            called = raised.func if isinstance(raised, ast.Call) else raised
            if isinstance(called, ast.Name) and called.id in BARE_ERRORS:
                found.append(f"{file.relative_to(package.parent)}:{node.lineno} {called.id}")
    return found


def test_no_module_raises_a_bare_built_in_error_so_except_agent_env_error_catches_them_all() -> None:
    assert bare_built_in_raises(Path(agent_env.__file__).parent) == []


def test_a_bare_built_in_raise_is_found_however_it_is_written(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text(
        "def f(x):\n    if x:\n        raise ValueError('no')\n    raise KeyError\n"
    )
    (package / "b.py").write_text("from pkg.errors import Mine\n\ndef g():\n    raise Mine('fine')\n")

    assert sorted(bare_built_in_raises(package)) == ["pkg/a.py:3 ValueError", "pkg/a.py:4 KeyError"]


def test_an_argument_error_is_both_an_agent_env_error_and_the_value_error_callers_catch() -> None:
    with pytest.raises(AgentEnvError) as caught:
        agent_env.sandbox_provider("dokcer")

    assert isinstance(caught.value, ValueError) and isinstance(caught.value, agent_env.ArgumentError)
    assert str(caught.value).startswith("unknown sandbox provider 'dokcer'; choose one of: docker, local")


def test_except_agent_env_error_catches_a_broken_bundle_still_a_bundle_error(tmp_path: Path) -> None:
    root = make_bundle(tmp_path / "b", toml="[agents.reader\nenvs = 1\n")

    with pytest.raises(AgentEnvError) as caught:
        load_bundle(root)

    assert isinstance(caught.value, BundleError)
    assert str(caught.value).startswith(f"1 problem in {root}\n  bundle.toml: malformed TOML")


OPENENV = pytest.mark.needs("openenv_installed")
TRL = pytest.mark.needs("trl_installed")


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("agent_env._error_types.SandboxUnavailableError", RuntimeError),
        ("agent_env._error_types.SplitNotFoundError", KeyError),
        ("agent_env._error_types.TaskIndexError", IndexError),
        pytest.param(
            "agent_env.openenv._context.TaskLookupError",
            LookupError,
            marks=OPENENV,
        ),
        ("agent_env.sandbox._docker_image.ImageBuildError", RuntimeError),
        ("agent_env.view._api.FilterError", ValueError),
        pytest.param(
            "agent_env.training.trl._errors.ServerUnavailableError",
            ConnectionError,
            marks=TRL,
        ),
        pytest.param(
            "agent_env.training.trl._errors.ServerAtCapacityError",
            RuntimeError,
            marks=TRL,
        ),
        pytest.param(
            "agent_env.training.trl._errors.FleetMismatchError",
            ValueError,
            marks=TRL,
        ),
        pytest.param(
            "agent_env.training.trl._errors.UnknownSplitError",
            ValueError,
            marks=TRL,
        ),
        pytest.param(
            "agent_env.training.trl._errors.ToolCallError",
            RuntimeError,
            marks=TRL,
        ),
        pytest.param(
            "agent_env.training.trl._errors.DemonstrationError",
            RuntimeError,
            marks=TRL,
        ),
        pytest.param(
            "agent_env.training.trl._errors.EvalResultsError",
            ValueError,
            marks=TRL,
        ),
        pytest.param(
            "agent_env.training.trl._errors.UnsupportedToolError",
            ValueError,
            marks=TRL,
        ),
    ],
)
def test_an_error_keeps_the_built_in_base_a_caller_may_catch_it_by(
    name: str, builtin: type[Exception]
) -> None:
    module, _, attribute = name.rpartition(".")
    error = getattr(importlib.import_module(module), attribute)

    assert issubclass(error, AgentEnvError) and issubclass(error, builtin)


def test_an_unknown_split_or_index_is_an_agent_env_error_that_reads_as_its_message(tmp_path: Path) -> None:
    bundle = load_bundle(make_bundle(tmp_path / "b"))

    with pytest.raises(AgentEnvError) as split:
        bundle.tasks("dev")
    with pytest.raises(AgentEnvError) as index:
        bundle.task("train", 5)

    assert str(split.value) == "unknown split 'dev' (splits: train)"
    assert str(index.value) == "split 'train' has 1 tasks; index 5 is out of range"


def test_an_error_made_without_a_code_reads_as_its_message_alone() -> None:
    error = BundleError("b", [])

    assert (error.code, str(error)) == ("BUNDLE_INVALID", "0 problems in b")
    assert AgentEnvError("went wrong").code is None and str(AgentEnvError("went wrong")) == "went wrong"


def test_agent_env_error_is_importable_from_the_package_and_its_module_alike() -> None:
    from agent_env import _error_types as errors

    assert agent_env.AgentEnvError is errors.AgentEnvError is AgentEnvError
    assert "AgentEnvError" in agent_env.__all__


def test_the_error_codes_page_lists_every_error_code_and_no_other():
    assert documented_table_codes() == {code.value for code in ErrorCode}


@pytest.mark.needs("eval_installed")
def test_eval_s_own_codes_are_error_codes_the_server_never_sends() -> None:
    from agent_env.openenv import ERROR_CODES

    eval_s = {ErrorCode.SESSION_LOST, ErrorCode.POLICY_ERROR}

    assert {code for code in ErrorCode if not code.on_wire} == eval_s
    assert set(ERROR_CODES) == {code.value for code in ErrorCode} - eval_s


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
