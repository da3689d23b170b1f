"""Train a model with TRL's GRPOTrainer on the example bundle, served in process.

    python examples/train_grpo.py                      # a tiny model built here, on the CPU, offline
    python examples/train_grpo.py --model Qwen/Qwen3-4B --steps 50 --bundle ./my-bundle

The tiny model (about 100k parameters, built in this script, since nothing is downloaded here) is
untrained: it writes noise, calls no tool, and scores 0 on every task. It shows the loop running
end to end: rollouts reset on the server, the environment scores them (`get_reward`), GRPO steps.
With `--model`, a real chat model that calls tools (Qwen3, say) learns from the same loop.

The table printed after each step: the mean reward and its spread over the batch's rollouts, tool
calls and failed tool calls per rollout, and the step's seconds.
"""

from __future__ import annotations

import argparse
import math
import os
import warnings
from pathlib import Path
from typing import Any

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(variable, "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' own renames, inside TRL

WHARF = Path(__file__).resolve().parent / "wharf"


def tiny_model_and_tokenizer() -> tuple[Any, Any]:
    """A 2-layer Qwen3 and a byte-level BPE tokenizer with Qwen's chat template, built offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
    from trl.chat_template_utils import qwen3_chat_template

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    core.train_from_iterator(
        ["Store crate C12 in bay 3.", "The pantry holds flour and rice.", '{"name": "add_crate"}'], trainer
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left"
    )
    tokenizer.add_tokens(
        ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
    )
    tokenizer.chat_template = qwen3_chat_template
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def grpo_config(output_dir: str, *, on_cpu: bool, **overrides: Any) -> Any:
    """A GRPOConfig for a few small steps: groups of 2 rollouts, 2 prompts a step, 4 tool iterations."""
    from trl import GRPOConfig

    settings: dict[str, Any] = {
        "per_device_train_batch_size": 4,
        "num_generations": 2,
        "max_tool_calling_iterations": 4,
        "learning_rate": 1e-4,
        "logging_steps": 1,
        "use_cpu": on_cpu,
        "bf16": False,
        "report_to": "none",
        "save_strategy": "no",
        "disable_tqdm": True,
    }
    return GRPOConfig(output_dir=output_dir, **{**settings, **overrides})


def step_table() -> Any:
    """A TrainerCallback that prints one line per logged step."""
    from transformers import TrainerCallback

    columns = [("reward", "reward"), ("reward_std", "spread"), ("tools/call_frequency", "calls")]
    columns += [("tools/failure_frequency", "failed"), ("step_time", "seconds")]

    class StepTable(TrainerCallback):  # type: ignore[misc]
        def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            print("step " + " ".join(f"{title:>8}" for _, title in columns), flush=True)

        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any
        ) -> None:
            if logs and "reward" in logs:
                cells = " ".join(f"{_number(logs.get(key)):>8}" for key, _ in columns)
                print(f"{state.global_step:>4} {cells}", flush=True)

    return StepTable()


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--bundle", default=str(WHARF), help="the bundle to train on (default: examples/wharf)"
    )
    parser.add_argument("--model", help="a model name or path; default: a tiny model built here, offline")
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps (default: 3)")
    parser.add_argument("--max-concurrent-envs", type=int, default=64)
    parser.add_argument(
        "--record",
        default="runs/demo",
        help="where every episode's trajectory is written (default: runs/demo; view it with agent-env view)",
    )
    options = parser.parse_args()

    from transformers import PrinterCallback
    from trl import GRPOTrainer

    from agent_env.training.trl import AgentEnv

    if options.model:
        model: Any = options.model
        tokenizer = None
    else:
        model, tokenizer = tiny_model_and_tokenizer()
    record = Path(options.record).resolve()
    with AgentEnv.local(
        options.bundle, max_concurrent_envs=options.max_concurrent_envs, record=record
    ) as env:
        print(f"{env}: {len(env.dataset)} tasks; toolsets: {', '.join(_toolsets(env.factory))}", flush=True)
        print(f"recording every episode's trajectory to {record}", flush=True)
        config = grpo_config(
            "/tmp/agent-env-train-grpo",
            on_cpu=tokenizer is not None,
            max_completion_length=48 if tokenizer is not None else 1024,
            max_steps=options.steps,
        )
        trainer = GRPOTrainer(
            model=model,
            args=config,
            processing_class=tokenizer,
            train_dataset=env.dataset,
            environment_factory=env.factory,
            callbacks=[step_table()],
        )
        trainer.remove_callback(PrinterCallback)  # the table above replaces its raw log lines
        trainer.train()
    print("done: every episode torn down, the server stopped")
    print(f"trajectories: {record} (read them with agent_env.read_trajectories, or agent-env view {record})")


def _toolsets(factory: Any) -> list[str]:
    return list(factory) if isinstance(factory, dict) else [factory.__name__]


if __name__ == "__main__":
    main()
