"""`agent-env eval`: a user measures a model at a chat-completions endpoint on the example bundle."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from agent_env import load_bundle
from agent_env.cli import main
from tst.support.chat_stand_in import API_KEY, MODEL, UNKNOWN_TOOL, ChatStandIn, eval_ids, start_stand_in
from tst.support.wharf import WHARF, wharf_with_a_broken_task

pytestmark = pytest.mark.needs("eval_installed")

IDS = eval_ids()


def eval_args(url: str, *extra: str, model: str = MODEL) -> list[str]:
    return [
        "eval",
        str(WHARF),
        "--model-url",
        url,
        "--model",
        model,
        "--api-key-env",
        "STAND_IN_KEY",
        *extra,
    ]


def test_eval_prints_progress_then_each_task_s_mean_spread_and_pass_at_k_and_writes_results_json(
    serve, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    _, url = start_stand_in(serve, {IDS[0]: ["solve", "text"], IDS[2]: ["solve", "solve"]})

    code = main(eval_args(url, "-n", "2", "--out", str(tmp_path)))

    out, err = capsys.readouterr()
    assert code == 0
    assert "eval: 22/22 episodes, mean score 0.14, 0 errors" in err
    header, _, *table = out.split("\n\n")[0].splitlines()
    assert header.split() == [
        *("index", "id", "samples", "mean", "std", "min", "max"),
        *("pass@1", "pass@k", "errors", "failed", "seconds"),
    ]
    rows = {line.split()[1]: line.split() for line in table}
    assert rows[IDS[0]][2:9] == ["2", "0.50", "0.50", "0.00", "1.00", "0.50", "1.00"]
    assert rows[IDS[2]][2:9] == ["2", "1.00", "0.00", "1.00", "1.00", "1.00", "1.00"]
    assert rows["11"][:10] == ["all", "11", "tasks", "22", "0.14", "-", "-", "-", "0.14", "0.18"]
    assert f"results.json and the trajectories are in {tmp_path}" in out
    assert json.loads((tmp_path / "results.json").read_text())["settings"]["model_url"] == url
    assert list(tmp_path.glob("trajectories-*.jsonl"))


def test_a_model_that_calls_an_unknown_tool_forever_ends_its_turn_at_the_default_bound_and_eval_ends(
    serve, tmp_path, capsys, monkeypatch
):
    from agent_env._trajectory_reader import read_trajectories

    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    _, url = start_stand_in(serve, {IDS[0]: ["unknown"]})
    codes: list[int] = []
    run = threading.Thread(
        target=lambda: codes.append(main(eval_args(url, "--out", str(tmp_path)))), daemon=True
    )

    run.start()
    run.join(timeout=60)

    assert not run.is_alive(), "eval did not end"
    assert codes == [0]
    [played] = [t for t in read_trajectories(tmp_path) if t.task.id == IDS[0]]
    [turn] = played.turns
    assert len(turn.calls) == 100
    assert {(call.tool, call.error_code) for call in turn.calls} == {(UNKNOWN_TOOL, "UNKNOWN_TOOL")}
    assert played.outcome.kind == "scored" and played.score == 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_line_before_any_episode(capsys, code: int, tmp_path) -> str:
    out, err = capsys.readouterr()
    assert code == 2
    assert out == "" and "episodes" not in err
    assert not list(tmp_path.iterdir())
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_an_endpoint_that_does_not_answer_is_one_line_and_exit_2_before_any_episode(capsys, tmp_path):
    code = main(eval_args(f"http://127.0.0.1:{free_port()}/v1", "--out", str(tmp_path)))

    assert "no model server answers at http://127.0.0.1" in one_line_before_any_episode(
        capsys, code, tmp_path
    )


def test_an_endpoint_that_refuses_the_key_is_one_line_and_exit_2_before_any_episode(
    serve, capsys, tmp_path, monkeypatch
):
    monkeypatch.setenv("STAND_IN_KEY", "sk-wrong")
    scripted, url = start_stand_in(serve)

    code = main(eval_args(url, "--out", str(tmp_path)))

    assert "refused the API key (401)" in one_line_before_any_episode(capsys, code, tmp_path)
    assert scripted.requests == []


def test_a_model_the_endpoint_does_not_serve_is_one_line_and_exit_2_before_any_episode(
    serve, capsys, tmp_path, monkeypatch
):
    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    scripted, url = start_stand_in(serve)

    code = main(eval_args(url, "--out", str(tmp_path), model="gpt-nope"))

    line = one_line_before_any_episode(capsys, code, tmp_path)
    assert f"does not serve model 'gpt-nope' (it serves: {MODEL})" in line
    assert scripted.requests == []


def without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """`code` run by a fresh interpreter in which `module` does not import, as on a machine without it."""
    blocked = f"import sys; sys.modules[{module!r}] = None\n{code}"
    return subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120)


def test_agent_env_evals_openai_policy_fails_at_import_without_its_extra_naming_the_install_line():
    done = without("openai", "from agent_env.eval import OpenAIPolicy")

    assert done.returncode != 0
    assert (
        "agent_env.eval needs openai, not installed here: pip install 'agentenv-framework[eval]'"
        in done.stderr
    )


def test_the_player_and_the_scripted_policy_import_without_openai_as_the_trainers_demonstrations_need():
    done = without("openai", "from agent_env.eval import PlaySettings, ScriptedPolicy, play_sample")

    assert done.returncode == 0, done.stderr


def test_agent_env_eval_fails_at_import_without_the_trainers_client_naming_the_install_line():
    done = without("httpx", "import agent_env.eval")

    assert done.returncode != 0
    assert (
        "agent_env.eval needs httpx, not installed here: pip install 'agentenv-framework[eval]'"
        in done.stderr
    )


def test_a_local_model_folder_that_is_not_a_model_is_one_line_and_exit_2_before_any_episode(capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    not_a_model = tmp_path / "checkpoint"
    not_a_model.mkdir()

    code = main(["eval", str(WHARF), "--model", str(not_a_model), "--out", str(out)])

    line = one_line_before_any_episode(capsys, code, out)
    assert f"{not_a_model} holds no config.json: pass a Hugging Face model folder" in line


def test_a_local_model_folder_that_does_not_exist_is_one_line_and_exit_2_before_any_episode(capsys, tmp_path):
    code = main(["eval", str(WHARF), "--model", str(tmp_path / "nowhere")])

    assert f"{tmp_path / 'nowhere'} does not exist" in one_line_before_any_episode(capsys, code, tmp_path)


def test_an_endpoint_whose_answer_trickles_in_is_an_error_at_request_timeout_and_eval_exits_3(
    serve, tmp_path
):
    _, url = start_stand_in(serve, {IDS[0]: ["solve"]}, broken={IDS[1]: "slow"})
    command = [sys.executable, "-m", "agent_env.cli", *eval_args(url, "--request-timeout", "1.5")]

    done = subprocess.run(
        [*command, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "STAND_IN_KEY": API_KEY},
    )

    assert done.returncode == 3, done.stderr
    assert "eval: 11/11 episodes, mean score 0.10, 1 error" in done.stderr
    assert f"the endpoint at {url} sent no complete answer within 1.5 s" in done.stderr
    assert "1 sample failed at the model's endpoint" in done.stderr
    assert "the mean is not the model's: exit 3" in done.stderr
    totals = next(line.split() for line in done.stdout.splitlines() if line.startswith("all"))
    assert totals[3:5] == ["11", "0.10"] and totals[-3:] == ["1", "0", "-"]
    assert json.loads((tmp_path / "results.json").read_text())["errors"] == 1


def test_endpoint_errors_of_any_kind_are_counted_beside_the_mean_and_eval_exits_3(
    serve, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    _, url = start_stand_in(
        serve, {IDS[0]: ["solve"]}, down=frozenset({IDS[1]}), broken={IDS[2]: "not-json", IDS[3]: "garbage"}
    )

    code = main(eval_args(url, "--max-retries", "0", "--out", str(tmp_path)))

    out, err = capsys.readouterr()
    assert code == 3
    assert "eval: 11/11 episodes, mean score 0.12, 3 errors" in err
    assert "3 samples failed at the model's endpoint" in err
    assert f"{url} answered 500" in err and "sent something that is not JSON" in err
    assert json.loads((tmp_path / "results.json").read_text())["errors"] == 3
    assert "errors" in out.splitlines()[0]


def test_a_run_without_endpoint_errors_exits_0_even_when_every_sample_scores_0(serve, capsys, monkeypatch):
    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    _, url = start_stand_in(serve)

    code = main(eval_args(url))

    assert code == 0
    assert "eval: 11/11 episodes, mean score 0.00, 0 errors" in capsys.readouterr().err


def test_eval_s_help_says_which_exit_code_an_unsound_run_ends_with(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])

    out = " ".join(capsys.readouterr().out.split())
    assert "--request-timeout SECONDS" in out
    assert "3 some samples were errors of the model's side" in out


def test_eval_with_skip_broken_tasks_lists_the_task_left_out_and_plays_the_only_split_the_bundle_has(
    serve, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    bundle = wharf_with_a_broken_task(tmp_path / "wharf")
    [first, second] = load_bundle(bundle, skip_broken_tasks=True).tasks("train")
    stand_in = ChatStandIn(load_bundle(bundle, skip_broken_tasks=True), "train", {first.id: ["solve"]})
    endpoint = [
        "--model-url",
        f"{serve(stand_in.app).url}/v1",
        "--model",
        MODEL,
        "--api-key-env",
        "STAND_IN_KEY",
    ]

    code = main(["eval", str(bundle), *endpoint, "--skip-broken-tasks"])

    out, err = capsys.readouterr()
    assert code == 0
    assert err.startswith(
        "skipped 1 of 3 tasks:\n  tasks/train.jsonl:3 (task 'stray-000'): agent 'stowaway' is not defined"
    )
    assert "eval: 2/2 episodes, mean score 0.50, 0 errors" in err
    assert f"eval: played split 'train', the only split {bundle} has" in err
    rows = {line.split()[1]: line.split()[3] for line in out.split("\n\n")[0].splitlines()[2:4]}
    assert rows == {first.id: "1.00", second.id: "0.00"}


def test_eval_of_a_bundle_with_several_splits_plays_eval_by_default_without_a_word_of_it(
    serve, capsys, monkeypatch
):
    monkeypatch.setenv("STAND_IN_KEY", API_KEY)
    _, url = start_stand_in(serve)

    main(eval_args(url))

    assert "played split" not in capsys.readouterr().err


def test_eval_with_skip_broken_tasks_at_a_servers_url_is_one_line_and_exit_2_saying_to_serve_with_it(capsys):
    code = main(["eval", "http://127.0.0.1:1", "--model", MODEL, "--skip-broken-tasks"])

    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == (
        "error: --skip-broken-tasks leaves out the tasks of a bundle folder that do not load, and "
        "http://127.0.0.1:1 is not one: a server loaded its tasks when it started (serve it with "
        "--skip-broken-tasks), or give the bundle's folder\n"
    )
