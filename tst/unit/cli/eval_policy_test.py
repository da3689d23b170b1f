"""`agent-env eval --policy`: a user tries a bundle's eval before any model exists, with its reference
plays or a policy of Python; and a wrong `--split` is refused before any model is loaded."""

from __future__ import annotations

import itertools
import json
import shutil
import socket
import sys
import textwrap
from pathlib import Path

import pytest

from agent_env import load_bundle
from agent_env.cli import main
from agent_env.openenv import build_app
from tst.support.wharf import WHARF

pytestmark = pytest.mark.needs("eval_installed")

_NAMES = itertools.count()


def rows(out: str) -> dict[str, list[str]]:
    """The table's rows by task id (the totals' by 'all')."""
    table = out.split("\n\n")[0].splitlines()[2:]
    return {line.split()[1] if not line.startswith("all") else "all": line.split() for line in table}


def a_module(folder: Path, monkeypatch: pytest.MonkeyPatch, code: str) -> str:
    """A module of `code` in `folder`, eval run from there; its name (a fresh one each time)."""
    name = f"user_policy_{next(_NAMES)}"
    (folder / f"{name}.py").write_text(textwrap.dedent(code))
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", [*sys.path])  # eval puts the current directory first: undone after
    return name


def one_error_line(capsys: pytest.CaptureFixture[str], code: int) -> str:
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and "episodes" not in err
    [line] = err.splitlines()
    return line


def test_the_reference_policy_scores_1_on_every_task_whose_reference_play_scores_1(capsys):
    code = main(["eval", str(WHARF), "--policy", "reference", "-n", "2"])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert "eval: 22/22 episodes, mean score 1.00, 0 errors" in err
    table = rows(out)
    assert table.pop("all")[:5] == ["all", "11", "tasks", "22", "1.00"]
    assert {row[3] for row in table.values()} == {"1.00"}
    assert set(table) == set(load_bundle(WHARF).solutions["eval"])


def test_the_reference_policy_leaves_out_the_tasks_without_a_reference_play_and_names_them(tmp_path, capsys):
    bundle = tmp_path / "wharf"
    shutil.copytree(WHARF, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    plays = (bundle / "solutions" / "eval.jsonl").read_text().splitlines(keepends=True)
    (bundle / "solutions" / "eval.jsonl").write_text("".join(plays[1:]))
    missing = json.loads(plays[0])["id"]

    code = main(["eval", str(bundle), "--policy", "reference", "--out", str(tmp_path / "out")])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert "eval: 10/10 episodes, mean score 1.00, 0 errors" in err
    assert f"eval: 1 task of split 'eval' has no reference play, left out: {missing}" in err
    assert missing not in rows(out) and rows(out)["all"][:5] == ["all", "10", "tasks", "10", "1.00"]
    assert json.loads((tmp_path / "out" / "results.json").read_text())["settings"]["policy"] == "reference"


def test_the_reference_policy_plays_at_a_servers_url_from_its_task_api(serve, capsys):
    url = serve(build_app(load_bundle(WHARF))).url

    code = main(["eval", url, "--policy", "reference", "--split", "train"])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert "eval: 33/33 episodes, mean score 1.00, 0 errors" in err
    assert rows(out)["all"][:5] == ["all", "33", "tasks", "33", "1.00"]


def test_a_module_callable_policy_from_the_current_directory_plays_every_sample(
    tmp_path, capsys, monkeypatch
):
    name = a_module(
        tmp_path,
        monkeypatch,
        """
        from agent_env.eval import AssistantMessage

        asked = []

        def act(messages, tools):
            asked.append([tool["function"]["name"] for tool in tools])
            return AssistantMessage(content="I will not.")
        """,
    )

    code = main(["eval", str(WHARF), "--policy", f"{name}:act"])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert "eval: 11/11 episodes, mean score 0.00, 0 errors" in err
    asked = sys.modules[name].asked
    assert len(asked) == 11 and all("end_turn" in tools for tools in asked)
    assert rows(out)["all"][:5] == ["all", "11", "tasks", "11", "0.00"]


def test_a_module_object_with_for_task_plays_each_sample_with_the_policy_it_makes_for_the_task(
    tmp_path, capsys, monkeypatch
):
    name = a_module(
        tmp_path,
        monkeypatch,
        f"""
        from agent_env import load_bundle
        from agent_env.eval import ScriptedPolicy

        class Replaying:
            def __init__(self):
                self.plays = load_bundle({str(WHARF)!r}).solutions["eval"]

            def for_task(self, task):
                return ScriptedPolicy(self.plays[task.id])

        replaying = Replaying()
        """,
    )

    code = main(["eval", str(WHARF), "--policy", f"{name}:replaying", "-n", "2"])

    assert code == 0
    assert "eval: 22/22 episodes, mean score 1.00, 0 errors" in capsys.readouterr().err


POLICIES = """
    def two_arguments(messages, tools): ...
    class Policy:
        def __call__(self, messages, tools): ...
    number = 3
    def one_argument(messages): ...
    """


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("act", "--policy 'act' is neither 'reference' nor MODULE:NAME: name a module and a policy in it"),
        (":act", "--policy ':act' is neither 'reference' nor MODULE:NAME"),
        ("no_such_module_here:act", "--policy: no module 'no_such_module_here' in "),
        (
            "{module}:nope",
            "--policy {module}:nope: module '{module}' has no 'nope': define it there, a policy",
        ),
        (
            "{module}:Policy",
            "--policy {module}:Policy is a class, not a policy: it must be a policy, called as",
        ),
        (
            "{module}:number",
            "--policy {module}:number is a int, not a policy: it must be a policy, called as",
        ),
        ("{module}:one_argument", "--policy {module}:one_argument is a function, not a policy"),
    ],
)
def test_each_policy_that_cannot_be_played_is_one_line_and_exit_2_saying_what_to_give(
    spec, said, tmp_path, capsys, monkeypatch
):
    module = a_module(tmp_path, monkeypatch, POLICIES)

    code = main(["eval", str(WHARF), "--policy", spec.format(module=module)])

    assert said.format(module=module) in one_error_line(capsys, code)


def test_a_module_that_fails_to_import_is_one_line_naming_its_error(tmp_path, capsys, monkeypatch):
    module = a_module(tmp_path, monkeypatch, "raise RuntimeError('no GPU here')\n")

    code = main(["eval", str(WHARF), "--policy", f"{module}:act"])

    line = one_error_line(capsys, code)
    assert line == f"error: --policy: importing module '{module}' raised RuntimeError: no GPU here"


def test_a_policy_that_answers_no_assistant_message_makes_each_sample_an_error_and_eval_exits_3(
    tmp_path, capsys, monkeypatch
):
    module = a_module(tmp_path, monkeypatch, "def act(messages, tools):\n    return 'store C17 in bay 5'\n")

    code = main(["eval", str(WHARF), "--policy", f"{module}:act"])

    _, err = capsys.readouterr()
    assert code == 3
    assert f"11 samples failed in the policy {module}:act" in err
    assert f"--policy {module}:act answered a str, not an AssistantMessage" in err


def test_policy_with_a_models_options_is_refused_naming_them(capsys):
    code = main(["eval", str(WHARF), "--policy", "reference", "--model-url", "http://x/v1", "--batch", "2"])

    assert one_error_line(capsys, code) == (
        "error: --policy plays without a model, and --model-url, --batch are a model's: drop them"
    )


def test_policy_and_model_together_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["eval", str(WHARF), "--policy", "reference", "--model", "./checkpoint"])

    assert exited.value.code == 2
    assert "argument --model: not allowed with argument --policy" in capsys.readouterr().err


def test_neither_policy_nor_model_is_a_usage_error_naming_both(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["eval", str(WHARF)])

    assert exited.value.code == 2
    assert "one of the arguments --model --policy is required" in capsys.readouterr().err


def test_a_wrong_split_is_refused_naming_split_before_a_local_model_is_loaded(tmp_path, capsys):
    code = main(["eval", str(WHARF), "--split", "test", "--model", str(tmp_path / "nowhere")])

    assert one_error_line(capsys, code) == (
        f"error: --split test: {WHARF} has no split 'test'; name one of its splits: eval, train"
    )


def test_a_wrong_split_is_refused_naming_split_before_the_endpoint_is_asked(capsys):
    with socket.socket() as listening:  # an endpoint that would never answer: it is not asked
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        url = f"http://127.0.0.1:{listening.getsockname()[1]}/v1"
        code = main(
            [
                "eval",
                str(WHARF),
                "--split",
                "test",
                "--model-url",
                url,
                "--model",
                "m",
                "--request-timeout",
                "5",
            ]
        )

    assert one_error_line(capsys, code).startswith("error: --split test: ")


def test_a_wrong_split_is_refused_naming_split_before_the_reference_plays_are_asked(capsys):
    code = main(["eval", str(WHARF), "--split", "test", "--policy", "reference"])

    assert "--split test:" in one_error_line(capsys, code)


def test_a_bundle_with_several_splits_and_no_eval_is_refused_asking_for_split(tmp_path, capsys):
    bundle = tmp_path / "wharf"
    shutil.copytree(WHARF, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    (bundle / "tasks" / "eval.jsonl").rename(bundle / "tasks" / "test.jsonl")
    (bundle / "solutions" / "eval.jsonl").rename(bundle / "solutions" / "test.jsonl")

    code = main(["eval", str(bundle), "--policy", "reference"])

    assert one_error_line(capsys, code) == (
        f"error: {bundle} has no split 'eval', the one eval plays by default: name one of its splits "
        "with --split (test, train)"
    )
