"""Train a model with TRL's AsyncGRPO on a served bundle: generation on a vLLM server, rollouts in a
process of their own, training on another GPU. It needs GPUs (see below); the CPU demo is
`train_grpo.py`.

On one machine with two GPUs of compute capability 8.0 or 9.0 (A100, A10G, L4, L40S, H100; not
Blackwell, for which AsyncGRPO's flash-attn3 kernel is not built):

    pip install 'agentenv-framework[trl]' 'trl[vllm,peft,kernels]==1.16.*' 'vllm==0.29.*'

    # 1. the bundle's server
    agent-env serve examples/wharf --port 8000 --max-concurrent-envs 64

    # 2. vLLM on GPU 0 (the command `python examples/train_async_grpo.py --print-vllm-command` prints)
    CUDA_VISIBLE_DEVICES=0 VLLM_SERVER_DEV_MODE=1 VLLM_ALLOW_RUNTIME_LORA_UPDATING=1 \\
        vllm serve Qwen/Qwen3-4B --host 127.0.0.1 --port 8001 --dtype bfloat16 --max-model-len 32768 \\
        --enable-lora --max-lora-rank 16 --weight-transfer-config '{"backend": "nccl"}' \\
        --logprobs-mode processed_logprobs --max-logprobs -1

    # 3. the trainer on GPU 1
    CUDA_VISIBLE_DEVICES=1 python examples/train_async_grpo.py --env-url http://127.0.0.1:8000

`--max-model-len` must cover the longest conversation plus `--max-completion-length`: AsyncGRPO asks
vLLM for that many new tokens on every turn, however long the conversation has grown, and a request
past the limit gets a 400, which it retries 30 times before failing the run. The script checks the
served limit against the least a rollout may need before it starts.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import dataclass
from typing import Any

DEFAULT_MODEL = "Qwen/Qwen3-4B"
DEFAULT_VLLM_URL = "http://127.0.0.1:8001"


@dataclass(frozen=True)
class Plan:
    model: str
    env_url: str
    vllm_url: str
    max_model_len: int
    max_completion_length: int
    max_tool_calling_iterations: int
    lora_rank: int
    steps: int
    output_dir: str


def parse(argv: list[str] | None = None) -> tuple[Plan, bool]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=DEFAULT_MODEL, help=f"default: {DEFAULT_MODEL}")
    parser.add_argument("--env-url", default="http://127.0.0.1:8000", help="the agent-env server")
    parser.add_argument("--vllm-url", default=DEFAULT_VLLM_URL, help=f"default: {DEFAULT_VLLM_URL}")
    parser.add_argument("--max-model-len", type=int, default=32768, help="for --print-vllm-command")
    parser.add_argument("--max-completion-length", type=int, default=2048)
    parser.add_argument("--max-tool-calling-iterations", type=int, default=8)
    parser.add_argument("--lora-rank", type=int, default=16, help="0 trains every weight (default: 16)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--output-dir", default="async-grpo-agent-env")
    parser.add_argument(
        "--print-vllm-command", action="store_true", help="print the vLLM server's command and exit"
    )
    options = parser.parse_args(argv)
    plan = Plan(
        model=options.model,
        env_url=options.env_url,
        vllm_url=options.vllm_url.rstrip("/"),
        max_model_len=options.max_model_len,
        max_completion_length=options.max_completion_length,
        max_tool_calling_iterations=options.max_tool_calling_iterations,
        lora_rank=options.lora_rank,
        steps=options.steps,
        output_dir=options.output_dir,
    )
    return plan, options.print_vllm_command


def vllm_command(plan: Plan) -> str:
    """The vLLM server AsyncGRPO needs: dev mode (pause, weight transfer), NCCL weight syncs, the
    logprobs it trains with, and runtime LoRA loading when it syncs adapters."""
    port = plan.vllm_url.rsplit(":", 1)[-1]
    variables = ["VLLM_SERVER_DEV_MODE=1"]
    flags = ["--host", "127.0.0.1", "--port", port, "--dtype", "bfloat16"]
    flags += ["--max-model-len", str(plan.max_model_len)]
    if plan.lora_rank:
        variables.append("VLLM_ALLOW_RUNTIME_LORA_UPDATING=1")
        flags += ["--enable-lora", "--max-lora-rank", str(plan.lora_rank)]
    flags += ["--weight-transfer-config", json.dumps({"backend": "nccl"})]
    flags += ["--logprobs-mode", "processed_logprobs", "--max-logprobs", "-1"]
    return " ".join([*variables, shlex.join(["vllm", "serve", plan.model, *flags])])


def least_context(plan: Plan) -> int:
    """The fewest tokens vLLM must allow: every turn may write `max_completion_length` tokens, and the
    last one still asks for that many (the prompt and tool results come on top)."""
    return plan.max_completion_length * (plan.max_tool_calling_iterations + 1)


def check_vllm_server(plan: Plan) -> int:
    """The served `max_model_len`; exits with the server's command when none answers or it is too short."""
    import httpx

    try:
        answer = httpx.get(f"{plan.vllm_url}/v1/models", timeout=10)
        answer.raise_for_status()
        served = int(answer.json()["data"][0]["max_model_len"])
    except (httpx.HTTPError, LookupError, TypeError, ValueError) as exc:
        raise SystemExit(
            f"no vLLM server answers at {plan.vllm_url} ({exc}); start one with:\n\n  {vllm_command(plan)}\n"
        ) from None
    if served < least_context(plan):
        raise SystemExit(
            f"the vLLM server at {plan.vllm_url} allows {served} tokens, but a rollout of "
            f"{plan.max_tool_calling_iterations + 1} turns of up to {plan.max_completion_length} tokens "
            f"needs {least_context(plan)} plus its prompt and tool results; a longer request gets a 400, "
            "which AsyncGRPO retries 30 times before the run fails. Restart vLLM with a larger "
            "--max-model-len, or lower --max-completion-length or --max-tool-calling-iterations."
        )
    return served


def train(plan: Plan) -> None:
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    from agent_env.training.trl import AgentEnv

    peft_config: Any = None
    if plan.lora_rank:
        from peft import LoraConfig

        peft_config = LoraConfig(r=plan.lora_rank, lora_alpha=2 * plan.lora_rank, target_modules="all-linear")
    with AgentEnv(plan.env_url) as env:
        print(f"{env}: {len(env.dataset)} tasks", flush=True)
        config = AsyncGRPOConfig(
            output_dir=plan.output_dir,
            vllm_server_base_url=plan.vllm_url,
            dtype="bfloat16",
            max_completion_length=plan.max_completion_length,
            max_tool_calling_iterations=plan.max_tool_calling_iterations,
            num_generations=8,
            per_device_train_batch_size=16,
            max_inflight_tasks=32,
            max_steps=plan.steps,
            learning_rate=1e-5,
            logging_steps=1,
            report_to="none",
        )
        trainer = AsyncGRPOTrainer(
            model=plan.model,
            args=config,
            train_dataset=env.dataset,
            environment_factory=env.factory,
            peft_config=peft_config,
        )
        trainer.train()
        trainer.save_model(plan.output_dir)


def main(argv: list[str] | None = None) -> None:
    plan, print_command = parse(argv)
    if print_command:
        print(vllm_command(plan))
        return
    served = check_vllm_server(plan)
    print(f"vLLM at {plan.vllm_url}: max_model_len {served}", flush=True)
    train(plan)


# AsyncGRPO starts its rollout process with multiprocessing's "spawn", which imports this script again
# in the new process: without this guard, that import would start another training run.
if __name__ == "__main__":
    main(sys.argv[1:])
