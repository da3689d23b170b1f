"""The AsyncGRPO example: what runs without a GPU (the vLLM server it asks for, the checks it makes
before training, the main guard AsyncGRPO's spawned process relies on, and the whole loop's flags and
steps around training, played on a stand-in for vLLM's chat completions)."""

from __future__ import annotations

import runpy
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agent_env import load_bundle
from examples.train_async_grpo import (
    DEFAULT_MODEL,
    after_training,
    before_training,
    check_vllm_server,
    main,
    parse,
)
from examples.train_grpo import WHARF
from tst.support.chat_stand_in import ChatStandIn

pytestmark = pytest.mark.needs("openenv_installed")

SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "train_async_grpo.py"


def vllm_models(max_model_len: int) -> Starlette:
    """vLLM's `/v1/models`, as much of it as the script reads."""

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"data": [{"id": "Qwen/Qwen3-4B", "max_model_len": max_model_len}]})

    return Starlette(routes=[Route("/v1/models", models)])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_vllm_command_it_prints_has_what_asyncgrpo_needs(capsys: pytest.CaptureFixture[str]):
    main(["--print-vllm-command", "--vllm-url", "http://127.0.0.1:8123", "--max-model-len", "40960"])

    command = capsys.readouterr().out
    assert command.startswith(
        "VLLM_SERVER_DEV_MODE=1 VLLM_ALLOW_RUNTIME_LORA_UPDATING=1 vllm serve Qwen/Qwen3-4B"
    )
    for flag in (
        "--port 8123",
        "--max-model-len 40960",
        "--enable-lora --max-lora-rank 16",
        """--weight-transfer-config '{"backend": "nccl"}'""",
        "--logprobs-mode processed_logprobs",
    ):
        assert flag in command


def test_without_lora_the_vllm_command_loads_no_adapters(capsys: pytest.CaptureFixture[str]):
    main(["--print-vllm-command", "--lora-rank", "0"])

    command = capsys.readouterr().out
    assert "lora" not in command.lower()


def test_with_no_vllm_server_it_stops_before_training_and_says_how_to_start_one():
    plan, _ = parse(["--vllm-url", f"http://127.0.0.1:{free_port()}"])

    with pytest.raises(SystemExit, match="no vLLM server answers") as stopped:
        check_vllm_server(plan)
    assert "VLLM_SERVER_DEV_MODE=1" in str(stopped.value)


@pytest.mark.needs("openenv_installed")
def test_a_vllm_context_too_short_for_the_turns_stops_it_naming_the_400_and_the_fix(
    serve: Callable[..., Any],
):
    server = serve(vllm_models(max_model_len=8192))
    plan, _ = parse(["--vllm-url", server.url])  # 9 turns of up to 2048 tokens: 18432 at least

    with pytest.raises(SystemExit, match="allows 8192 tokens") as stopped:
        check_vllm_server(plan)
    assert "400" in str(stopped.value)
    assert "--max-model-len" in str(stopped.value)


@pytest.mark.needs("openenv_installed")
def test_a_vllm_context_that_covers_the_turns_passes(serve: Callable[..., Any]):
    server = serve(vllm_models(max_model_len=32768))
    plan, _ = parse(["--vllm-url", server.url])

    assert check_vllm_server(plan) == 32768


def test_importing_the_script_as_the_spawned_rollout_process_does_starts_nothing():
    namespace = runpy.run_path(str(SCRIPT), run_name="__mp_main__")

    assert callable(namespace["main"])


def test_without_the_loop_s_flags_it_plans_no_evaluation_and_its_vllm_command_has_no_tool_call_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan, _ = parse([])
    main(["--print-vllm-command"])

    assert (plan.loop.pass_rate, plan.loop.eval_split, plan.loop.evaluates) == (None, None, False)
    assert "tool-call-parser" not in capsys.readouterr().out


def test_the_loop_s_flags_make_its_plan_and_add_the_tool_call_parser_its_chat_completions_need(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--select-by-pass-rate", "0.1", "0.9", "--samples", "4", "--sample-temperature", "0.7"]
    plan, _ = parse([*flags, "--eval-split", "eval", "--eval-out", str(tmp_path)])
    main(["--print-vllm-command", "--eval-split", "eval"])

    loop = plan.loop
    assert (loop.pass_rate, loop.samples, loop.temperature, loop.eval_split, loop.out) == (
        (0.1, 0.9),
        4,
        0.7,
        "eval",
        tmp_path.resolve(),
    )
    assert "--enable-auto-tool-choice --tool-call-parser hermes" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--samples", "4"], "--samples and --sample-temperature set how --select-by-pass-rate or"),
        (["--sample-temperature", "0.7"], "--select-by-score-std samples: pass one of them too"),
        (
            ["--select-by-score-std", "1.5"],
            "--select-by-score-std MIN needs 0 <= MIN <= 1 (e.g. 0.01), got 1.5",
        ),
        (["--select-by-pass-rate", "0.9", "0.1"], "needs 0 <= LOW <= HIGH <= 1, got 0.9 0.1"),
        (["--select-by-pass-rate", "0.1", "1.5"], "needs 0 <= LOW <= HIGH <= 1, got 0.1 1.5"),
        (["--select-by-pass-rate", "0", "1", "--samples", "1"], "--samples must be at least 2"),
        (
            ["--select-by-pass-rate", "0", "1", "--sample-temperature", "0"],
            "--sample-temperature must be > 0",
        ),
        (["--request-timeout", "0"], "--request-timeout must be > 0, got 0"),
    ],
)
def test_loop_flags_that_cannot_work_exit_2_before_anything_starts_saying_why(
    flags: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse(flags)

    assert stopped.value.code == 2
    assert problem in capsys.readouterr().err


TRAIN_PLAYS = {
    "store-crate-000": ["solve", "solve"],
    "move-crate-000": ["solve", "text"],
    "restock-000": ["text", "solve"],
    "cook-meal-000": ["solve", "text"],
}
"""Two samples each: one train task always passes, three half the time, every other never."""
HELD_OUT = "store-crate-100"
"""Given up on by the first conversation (before training), solved by the second (after)."""
ADAPTER = "trl-policy-v3"


@pytest.mark.needs("openenv_installed")
@pytest.mark.parametrize(
    "selection", [("--select-by-pass-rate", "0.25", "0.75"), ("--select-by-score-std", "0.01")]
)
def test_around_asyncgrpo_the_loop_samples_selects_and_scores_on_the_vllm_server_the_trained_adapter_after(
    selection: tuple[str, ...], serve: Callable[..., Any], tmp_path: Path
) -> None:
    from agent_env.eval import EvalResult
    from agent_env.training.trl import AgentEnv

    plays = {**TRAIN_PLAYS, HELD_OUT: ["text", "solve"]}
    vllm = ChatStandIn(
        load_bundle(WHARF),
        "train",
        plays,
        api_key=None,
        model=DEFAULT_MODEL,
        adapters=("trl-policy-v2", ADAPTER),
    )
    vllm_url = serve(vllm.app).url
    with AgentEnv.local(WHARF) as env:
        plan, _ = parse(
            [
                *("--env-url", env.url, "--vllm-url", vllm_url, "--eval-out", str(tmp_path)),
                *(*selection, "--samples", "2", "--eval-split", "eval"),
            ]
        )
        dataset, loop = before_training(plan, env)
        after_training(plan, loop, version=3)

    sampled = EvalResult.read(tmp_path / "pass-rates" / "results.json")
    within = [task.index for task in sampled.tasks if 0.25 <= (task.pass_rate or 0.0) <= 0.75]
    assert within == [task.index for task in sampled.tasks if (task.score_std or 0.0) >= 0.01]
    assert [task.samples for task in sampled.tasks] == [2] * 33
    assert len(within) == 3 and sorted(dataset["index"]) == within
    assert loop.table() == "\n".join(
        ["stage      eval split", "before          0.000", "after           0.091"]
    )
    assert EvalResult.read(tmp_path / "after" / "results.json").model == ADAPTER
    sampling = {(r["model"], r["temperature"]) for r in vllm.requests if r["temperature"] > 0}
    greedy = {(r["model"], r["temperature"]) for r in vllm.requests if r["temperature"] == 0}
    assert sampling == {(DEFAULT_MODEL, 1.0)} and greedy == {(DEFAULT_MODEL, 0.0), (ADAPTER, 0.0)}


@pytest.mark.needs("openenv_installed")
@pytest.mark.parametrize(
    ("band", "answers", "problem"),
    [
        (
            ("0.6", "0.9"),
            {},
            "pass-rates: no task of split 'train' has a pass rate within [0.6, 0.9] (32 of its 33 "
            "measured tasks below, 1 above)",
        ),
        (
            ("0.25", "0.75"),
            {"broken": {"move-crate-000": "garbage"}},
            "pass-rates: 2 of 66 samples failed on the model's side, so these scores are not the model's",
        ),
    ],
)
def test_the_loop_stops_before_training_when_no_task_is_within_the_bounds_or_the_model_side_failed(
    serve: Callable[..., Any], tmp_path: Path, band: tuple[str, str], answers: dict[str, Any], problem: str
) -> None:
    from agent_env.training.trl import AgentEnv

    vllm = ChatStandIn(load_bundle(WHARF), "train", TRAIN_PLAYS, api_key=None, model=DEFAULT_MODEL, **answers)
    vllm_url = serve(vllm.app).url
    with AgentEnv.local(WHARF) as env:
        plan, _ = parse(
            [
                *("--env-url", env.url, "--vllm-url", vllm_url, "--eval-out", str(tmp_path)),
                *("--select-by-pass-rate", *band, "--samples", "2"),
            ]
        )
        with pytest.raises(SystemExit) as stopped:
            before_training(plan, env)

    assert str(stopped.value).startswith(problem)


@pytest.mark.needs("openenv_installed")
def test_a_vllm_server_that_never_finishes_an_answer_stops_the_loop_at_the_request_timeout_saying_so(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    from agent_env.training.trl import AgentEnv

    vllm = ChatStandIn(
        load_bundle(WHARF),
        "train",
        TRAIN_PLAYS,
        api_key=None,
        model=DEFAULT_MODEL,
        broken={"move-crate-000": "slow"},
    )
    vllm_url = serve(vllm.app).url
    with AgentEnv.local(WHARF) as env:
        plan, _ = parse(
            [
                *("--env-url", env.url, "--vllm-url", vllm_url, "--eval-out", str(tmp_path)),
                *("--select-by-pass-rate", "0.25", "0.75", "--samples", "2", "--request-timeout", "1.5"),
            ]
        )
        with pytest.raises(SystemExit) as stopped:
            before_training(plan, env)

    said = str(stopped.value)
    assert said.startswith("pass-rates: 2 of 66 samples failed on the model's side")
    assert f"the endpoint at {vllm_url}/v1 sent no complete answer within 1.5 s" in said
