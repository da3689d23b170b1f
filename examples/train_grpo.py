"""Train a model with TRL's GRPOTrainer on the example bundle, served in process.

    python examples/train_grpo.py                      # a tiny model built here, on the CPU, offline
    python examples/train_grpo.py --model Qwen/Qwen3-0.6B --steps 50 --bundle ./my-bundle

The tiny model (about 100k parameters, built in this script, since nothing is downloaded here) is
untrained: it writes noise, calls no tool, and scores 0 on every task. It shows the loop running
end to end: rollouts reset on the server, the environment scores them (`get_reward`), GRPO steps.
With `--model`, a real chat model that calls tools (Qwen3, say) learns from the same loop.

The table printed after each step: the mean reward and its spread over the batch's rollouts, the
share of GRPO groups whose rewards differ (`GroupsWithSignal`), tool calls and failed tool calls per
rollout, and the step's seconds.

The whole loop, on a GPU (README: "On a GPU: the whole loop"; `whole_loop.py` has the steps):

    python examples/train_grpo.py --model Qwen/Qwen3-0.6B --steps 50 \\
        --select-by-pass-rate 0.1 0.9 --samples 8 --eval-split eval

samples each train task 8 times (temperature 1.0), trains only on the tasks solved in 10% to 90% of
their samples, and scores the eval split, greedy, before and after. For tasks with partial credit,
`--select-by-score-std 0.01` keeps instead the tasks whose samples' scores differ at all (a pass rate
sees only the samples that scored 1.0). The model plays these
evaluations through `agent_env.eval.TransformersPolicy`: the very model and tokenizer GRPOTrainer
trains (loaded here when `--model` is a name), prompted and parsed as GRPOTrainer does.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' own renames, inside TRL
if str(Path(__file__).resolve().parent) not in sys.path:  # imported, not run: whole_loop.py is beside it
    sys.path.append(str(Path(__file__).resolve().parent))

from whole_loop import AFTER, BEFORE, Loop, LoopPlan, PolicyAt, add_loop_arguments, loop_plan  # noqa: E402

WHARF = Path(__file__).resolve().parent / "wharf"
TINY_COMPLETION_TOKENS = 48
MODEL_COMPLETION_TOKENS = 1024
MAX_TOOL_CALLING_ITERATIONS = 4
LABEL = "grpo"
"""GRPO's episodes carry it in the record (`client`); the evaluations', played on the same server, none."""
OFFLINE = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")


def tiny_model_and_tokenizer() -> tuple[Any, Any]:
    """A 2-layer Qwen3 and a byte-level BPE tokenizer with Qwen's chat template, built offline.

    Not `agent_env.training.trl.tiny_tokenizer`'s: here the template's markers (`<tool_call>`, ...) are
    plain added tokens, decoded into the text as a real Qwen3's are, which tst/trl/hf_policy_test.py's
    unparseable completions rely on; that one trains them as special tokens."""
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
        "max_tool_calling_iterations": MAX_TOOL_CALLING_ITERATIONS,
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

    columns = [("reward", "reward"), ("reward_std", "spread"), ("groups_with_signal", "signal")]
    columns += [("tools/call_frequency", "calls"), ("tools/failure_frequency", "failed")]
    columns += [("step_time", "seconds")]

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


def parse(argv: list[str] | None = None) -> tuple[argparse.Namespace, LoopPlan]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--bundle", default=str(WHARF), help="the bundle to train on (default: examples/wharf)"
    )
    parser.add_argument("--model", help="a model name or path; default: a tiny model built here, offline")
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps (default: 3)")
    parser.add_argument(
        "--max-completion-length",
        type=int,
        help="tokens a rollout may write, tool results included (default: "
        f"{TINY_COMPLETION_TOKENS} for the tiny model, {MODEL_COMPLETION_TOKENS} for --model)",
    )
    parser.add_argument("--max-concurrent-envs", type=int, default=64)
    parser.add_argument(
        "--record",
        default="runs/demo",
        help="where every episode's trajectory is written (default: runs/demo; view it with agent-env view); "
        f"GRPO's carry client '{LABEL}'",
    )
    add_loop_arguments(parser)
    options = parser.parse_args(argv)
    return options, loop_plan(parser, options)


def named_model_and_tokenizer(name: str) -> tuple[Any, Any]:
    """The model GRPOTrainer would load for `name` (in float32, its default) on this machine's GPU, if it
    has one, and its tokenizer: loaded here so that the evaluations play the model being trained."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name, padding_side="left", truncation_side="left")
    model: Any = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float32)
    return model.to("cuda" if torch.cuda.is_available() else "cpu"), tokenizer


def playing(model: Any, tokenizer: Any, max_new_tokens: int) -> PolicyAt:
    """The policy of `model` as it is when asked for, in eval mode (training switches it back)."""
    from agent_env.eval import TransformersPolicy

    def at(temperature: float) -> Any:
        model.eval()
        return TransformersPolicy(model, tokenizer, max_new_tokens=max_new_tokens, temperature=temperature)

    return at


def train(options: argparse.Namespace, plan: LoopPlan, model: Any, tokenizer: Any) -> None:
    """GRPO on the bundle served here; with the loop's flags, its steps before and after."""
    from transformers import PrinterCallback
    from trl import GRPOTrainer

    from agent_env.eval import PlaySettings
    from agent_env.training.trl import AgentEnv, GroupsWithSignal

    tiny = options.model is None
    completion = options.max_completion_length or (
        TINY_COMPLETION_TOKENS if tiny else MODEL_COMPLETION_TOKENS
    )
    record = Path(options.record).resolve()
    with AgentEnv.local(
        options.bundle, max_concurrent_envs=options.max_concurrent_envs, record=record, label=LABEL
    ) as env:
        print(f"{env}: {len(env.dataset)} tasks; toolsets: {', '.join(_toolsets(env.factory))}", flush=True)
        print(f"recording every episode's trajectory to {record}", flush=True)
        loop = Loop(
            plan,
            env.url,
            settings=PlaySettings(max_tool_calls=MAX_TOOL_CALLING_ITERATIONS),
            model=options.model or "tiny",
            concurrency=4,  # one generation at a time: the rest overlap only their tool calls
        )
        dataset = loop.train_dataset(env, playing(model, tokenizer, completion))
        loop.score(BEFORE, playing(model, tokenizer, completion))
        config = grpo_config(
            "/tmp/agent-env-train-grpo",
            on_cpu=tiny,
            max_completion_length=completion,
            max_steps=options.steps,
        )
        groups_with_signal: Any = GroupsWithSignal()  # a TrainerCallback, made so when first made
        trainer = GRPOTrainer(
            model=model,
            args=config,
            processing_class=tokenizer,
            train_dataset=dataset,
            environment_factory=env.factory,
            callbacks=[groups_with_signal, step_table()],  # first: the table reads what it logs
        )
        trainer.remove_callback(PrinterCallback)  # the table above replaces its raw log lines
        trainer.train()
        loop.score(AFTER, playing(trainer.model, tokenizer, completion))
    print("done: every episode torn down, the server stopped")
    print(f"trajectories: {record} (read them with agent_env.read_trajectories, or agent-env view {record})")
    if table := loop.table():
        print("\n" + table)


def main(argv: list[str] | None = None) -> None:
    options, plan = parse(argv)
    if options.model is None:  # the tiny model is built here: nothing to download
        for variable in OFFLINE:
            os.environ.setdefault(variable, "1")
        model, tokenizer = tiny_model_and_tokenizer()
    else:
        model, tokenizer = named_model_and_tokenizer(options.model)
    train(options, plan, model, tokenizer)


def _toolsets(factory: Any) -> list[str]:
    return list(factory) if isinstance(factory, dict) else [factory.__name__]


if __name__ == "__main__":
    main()
