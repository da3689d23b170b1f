"""The AsyncGRPO example: what runs without a GPU (the vLLM server it asks for, the checks it makes
before training, and the main guard AsyncGRPO's spawned process relies on)."""

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

from examples.train_async_grpo import check_vllm_server, main, parse

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
