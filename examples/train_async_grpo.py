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

The whole loop (README: "On a GPU: the whole loop"; `whole_loop.py` has the steps):

    CUDA_VISIBLE_DEVICES=1 python examples/train_async_grpo.py --env-url http://127.0.0.1:8000 \\
        --select-by-pass-rate 0.1 0.9 --samples 8 --eval-split eval

samples each train task 8 times (temperature 1.0), trains only on the tasks solved in 10% to 90% of
their samples, and scores the eval split, greedy, before and after. The model plays these
evaluations on the vLLM server the run needs anyway, through `agent_env.eval.OpenAIPolicy` (its
chat completions): vLLM batches the samples it is sent at once, where a local model generates one
after another (K samples of every train task are hundreds of generations or more), and the
trainer's GPU holds only the model it trains. vLLM holds the trained weights after the run
(AsyncGRPO syncs them after every step): in place, or as its newest LoRA adapter, which the "after"
score asks for by name. The chat endpoint needs vLLM's tool-call parser (`--enable-auto-tool-choice
--tool-call-parser hermes`, for Qwen3; `--print-vllm-command` adds them with these flags) and
renders the prompt with the model's own chat template and the tools as the server lists them, so
these scores can differ a little from what the same model scores under training's rendering
(`agent-env eval --model CHECKPOINT` plays that).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if str(Path(__file__).resolve().parent) not in sys.path:  # imported, not run: whole_loop.py is beside it
    sys.path.append(str(Path(__file__).resolve().parent))

from whole_loop import AFTER, BEFORE, Loop, LoopPlan, PolicyAt, add_loop_arguments, loop_plan

if TYPE_CHECKING:
    from agent_env.training.trl import AgentEnv

DEFAULT_MODEL = "Qwen/Qwen3-4B"
DEFAULT_VLLM_URL = "http://127.0.0.1:8001"
TOOL_CALL_PARSER = "hermes"
"""vLLM's parser of Qwen3's tool calls, for the loop's chat completions; another family has its own."""
EVAL_CONCURRENCY = 32


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
    request_timeout_s: float = 300.0
    loop: LoopPlan = field(default_factory=LoopPlan)


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
        "--request-timeout",
        type=float,
        default=Plan.request_timeout_s,
        help="seconds one of the loop's chat requests may take, retries included (default: %(default)g)",
    )
    parser.add_argument(
        "--print-vllm-command", action="store_true", help="print the vLLM server's command and exit"
    )
    add_loop_arguments(parser)
    options = parser.parse_args(argv)
    if not options.request_timeout > 0:
        parser.error(f"--request-timeout must be > 0, got {options.request_timeout:g}")
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
        request_timeout_s=options.request_timeout,
        loop=loop_plan(parser, options),
    )
    return plan, options.print_vllm_command


def vllm_command(plan: Plan) -> str:
    """The vLLM server AsyncGRPO needs: dev mode (pause, weight transfer), NCCL weight syncs, the
    logprobs it trains with, and runtime LoRA loading when it syncs adapters; with the loop's
    evaluations, the tool-call parser its chat completions need."""
    port = plan.vllm_url.rsplit(":", 1)[-1]
    variables = ["VLLM_SERVER_DEV_MODE=1"]
    flags = ["--host", "127.0.0.1", "--port", port, "--dtype", "bfloat16"]
    flags += ["--max-model-len", str(plan.max_model_len)]
    if plan.lora_rank:
        variables.append("VLLM_ALLOW_RUNTIME_LORA_UPDATING=1")
        flags += ["--enable-lora", "--max-lora-rank", str(plan.lora_rank)]
    flags += ["--weight-transfer-config", json.dumps({"backend": "nccl"})]
    flags += ["--logprobs-mode", "processed_logprobs", "--max-logprobs", "-1"]
    if plan.loop.evaluates:
        flags += ["--enable-auto-tool-choice", "--tool-call-parser", TOOL_CALL_PARSER]
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


def served_policy(plan: Plan, model: str) -> PolicyAt:
    """The policy of `model` as the vLLM server serves it, by chat completions; checked when made."""
    from agent_env.eval import EndpointError, OpenAIPolicy

    def at(temperature: float) -> Any:
        policy = OpenAIPolicy(
            f"{plan.vllm_url}/v1",
            model,
            temperature=temperature,
            max_tokens=plan.max_completion_length,
            request_timeout_s=plan.request_timeout_s,
        )
        try:
            policy.check()
        except EndpointError as exc:
            raise SystemExit(str(exc)) from None
        return policy

    return at


def trained_model_name(plan: Plan, version: int) -> str:
    """What vLLM serves the trained policy as: AsyncGRPO's LoRA adapter of the last sync (named
    `...-v{version}`, after `trainer.model_version`), else the model, whose weights it synced in place."""
    import httpx

    listed = httpx.get(f"{plan.vllm_url}/v1/models", timeout=10).json()["data"]
    adapters = [str(model["id"]) for model in listed if model.get("parent")]
    return next((name for name in adapters if name.endswith(f"-v{version}")), plan.model)


def before_training(plan: Plan, env: AgentEnv) -> tuple[Any, Loop]:
    """The loop's steps before AsyncGRPO takes the vLLM server: the rows to train on (the tasks with
    signal, with --select-by-pass-rate or --select-by-score-std) and the held-out score before (with
    --eval-split)."""
    from agent_env.eval import PlaySettings

    loop = Loop(
        plan.loop,
        plan.env_url,
        settings=PlaySettings(max_tool_calls=plan.max_tool_calling_iterations),
        model=plan.model,
        concurrency=EVAL_CONCURRENCY,
    )
    dataset = loop.train_dataset(env, served_policy(plan, plan.model))
    loop.score(BEFORE, served_policy(plan, plan.model))
    return dataset, loop


def after_training(plan: Plan, loop: Loop, version: int) -> None:
    """The held-out score of the policy the run left on the vLLM server (with --eval-split)."""
    if plan.loop.eval_split is None:
        return
    trained = trained_model_name(plan, version)
    loop.score(AFTER, served_policy(plan, trained), model=trained)


def train(plan: Plan) -> None:
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    from agent_env.training.trl import AgentEnv

    peft_config: Any = None
    if plan.lora_rank:
        from peft import LoraConfig

        peft_config = LoraConfig(r=plan.lora_rank, lora_alpha=2 * plan.lora_rank, target_modules="all-linear")
    with AgentEnv(plan.env_url) as env:
        print(f"{env}: {len(env.dataset)} tasks", flush=True)
        dataset, loop = before_training(plan, env)
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
            train_dataset=dataset,
            environment_factory=env.factory,
            peft_config=peft_config,
        )
        trainer.train()
        trainer.save_model(plan.output_dir)
        after_training(plan, loop, trainer.model_version)
    if table := loop.table():
        print("\n" + table)


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
