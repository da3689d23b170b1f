"""The project's main job: a tiny model gets better at the example bundle's tasks on the CPU.

    python examples/demo.py                   # make demo: about 3 minutes on 2 cores, offline
    python examples/demo.py --sft-steps 250   # the SFT stage cut short: GRPO has more to do

Four stages, each measured by `agent_env.eval.evaluate` on the train and eval splits, greedy:
1. a tiny Qwen3 (about 0.6M parameters) and a byte-level BPE tokenizer, built here from the bundle's
   own texts, since nothing can be downloaded: untrained, it writes noise;
2. TRL's `SFTTrainer` on `env.demonstrations("train")`, the bundle's reference plays as the server
   answers them;
3. TRL's `GRPOTrainer` through `env.factory`, with its own generation, rewarded by the verifiers;
4. the scores of each stage in a table, a plot (`demo.png`: reward per GRPO step, scores per
   stage) and every trajectory (the evaluations' and the training's) under `--out`.

The eval split is reported as it is: 33 tasks teach a model this small to play them, not much that
carries over to tasks it never saw.
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(variable, "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' own renames, inside TRL

HARBOR = Path(__file__).resolve().parent / "harbor"
SPLITS = ("train", "eval")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEMPLATE_TOKENS = [
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]


@dataclass(frozen=True)
class Recipe:
    """What the demo trains with: measured on a 2-core machine to fit the time (README)."""

    hidden: int = 128
    layers: int = 2
    vocab: int = 8192
    sft_steps: int = 600
    sft_batch: int = 8
    sft_learning_rate: float = 3e-3
    grpo_steps: int = 60
    grpo_batch: int = 32
    generations: int = 8
    grpo_learning_rate: float = 1e-4
    max_completion_length: int = 160
    max_tool_calling_iterations: int = 6
    seed: int = 0


@dataclass
class Report:
    """Each stage's greedy scores by split, and the GRPO steps' logged rewards."""

    stages: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)


def tokenizer_for(texts: list[str], vocab: int) -> Any:
    """A byte-level BPE trained on `texts` with merges across words (no pre-splitting regex), so a
    tool schema every prompt repeats costs a few tokens; Qwen's chat template, as TRL bundles it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=SPECIALS + TEMPLATE_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    core.train_from_iterator(texts or ["x"], trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left"
    )
    tokenizer.add_tokens(TEMPLATE_TOKENS)
    tokenizer.chat_template = qwen3_chat_template
    return tokenizer


def tiny_model(tokenizer: Any, recipe: Recipe) -> Any:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(recipe.seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=recipe.hidden,
        intermediate_size=2 * recipe.hidden,
        num_hidden_layers=recipe.layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=recipe.hidden // 4,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def rendered(demonstrations: Any) -> list[str]:
    """The demonstrations as the chat template renders them: what the tokenizer learns its merges on."""
    template = tokenizer_for([], 300)
    return [
        template.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
        for row in demonstrations
    ]


def scores(url: str, model: Any, tokenizer: Any, out: Path, stage: str) -> dict[str, float]:
    """Greedy mean score per split, each trajectory written under `out/eval/<stage>/<split>`."""
    from agent_env.eval import PlaySettings, TransformersPolicy, evaluate

    model.eval()
    policy = TransformersPolicy(model, tokenizer, max_new_tokens=64)
    found = {}
    for split in SPLITS:
        result = evaluate(
            url,
            policy,
            split=split,
            concurrency=4,
            settings=PlaySettings(max_tool_calls=4),
            model=f"tiny ({stage})",
            out=out / "eval" / stage.replace(" ", "-") / split,
        )
        found[split] = result.mean_score or 0.0
    model.train()
    return found


def fine_tune(model: Any, tokenizer: Any, demonstrations: Any, recipe: Recipe, work: Path) -> None:
    from trl import SFTConfig, SFTTrainer

    config = SFTConfig(
        output_dir=str(work / "sft"),
        max_steps=recipe.sft_steps,
        per_device_train_batch_size=recipe.sft_batch,
        learning_rate=recipe.sft_learning_rate,
        warmup_steps=5,
        assistant_only_loss=True,
        max_length=None,
        logging_steps=max(1, recipe.sft_steps // 6),
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        seed=recipe.seed,
    )
    trainer = SFTTrainer(model=model, args=config, train_dataset=demonstrations, processing_class=tokenizer)
    trainer.remove_callback(_printer())
    trainer.train()


def reinforce(model: Any, tokenizer: Any, env: Any, recipe: Recipe, work: Path, report: Report) -> None:
    from trl import GRPOConfig, GRPOTrainer

    from agent_env.training.trl import GroupsWithSignal

    config = GRPOConfig(
        output_dir=str(work / "grpo"),
        max_steps=recipe.grpo_steps,
        per_device_train_batch_size=recipe.grpo_batch,
        num_generations=recipe.generations,
        learning_rate=recipe.grpo_learning_rate,
        max_completion_length=recipe.max_completion_length,
        max_tool_calling_iterations=recipe.max_tool_calling_iterations,
        beta=0.0,
        logging_steps=1,
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        seed=recipe.seed,
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        processing_class=tokenizer,
        train_dataset=env.dataset,
        environment_factory=env.factory,
        callbacks=[GroupsWithSignal(), _step_table(report)],
    )
    trainer.remove_callback(_printer())
    trainer.train()


def _printer() -> Any:
    from transformers import PrinterCallback

    return PrinterCallback


def _step_table(report: Report) -> Any:
    """A TrainerCallback that prints one line per GRPO step and keeps its reward."""
    from transformers import TrainerCallback

    columns = [("reward", "reward"), ("reward_std", "spread"), ("groups_with_signal", "signal")]
    columns += [("tools/call_frequency", "calls"), ("tools/failure_frequency", "failed")]
    columns += [("step_time", "seconds")]

    class StepTable(TrainerCallback):  # type: ignore[misc]
        def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            print("  step " + " ".join(f"{title:>8}" for _, title in columns), flush=True)

        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any
        ) -> None:
            if logs and "reward" in logs:
                report.rewards.append(float(logs["reward"]))
                cells = " ".join(f"{_number(logs.get(key)):>8}" for key, _ in columns)
                print(f"  {state.global_step:>4} {cells}", flush=True)

    return StepTable()


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3f}"


def stage_table(report: Report) -> str:
    lines = [f"{'stage':<22}" + "".join(f"{split + ' split':>14}" for split in SPLITS)]
    for stage, found in report.stages:
        lines.append(f"{stage:<22}" + "".join(f"{found[split]:>14.3f}" for split in SPLITS))
    return "\n".join(lines)


def plot(report: Report, to: Path) -> Path | None:
    """Reward per GRPO step, and each stage's scores; None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, (steps, stages) = plt.subplots(1, 2, figsize=(11, 4))
    steps.plot(range(1, len(report.rewards) + 1), report.rewards, marker=".", linewidth=1, label="step")
    window = 10
    if len(report.rewards) >= window:
        means = [sum(report.rewards[i - window : i]) / window for i in range(window, len(report.rewards) + 1)]
        steps.plot(range(window, len(report.rewards) + 1), means, linewidth=2, label=f"mean of {window}")
    steps.legend(loc="lower right")
    steps.set(title="GRPO: mean reward per step", xlabel="step", ylabel="reward", ylim=(-0.05, 1.05))
    names = [stage for stage, _ in report.stages]
    for offset, split in ((-0.2, "train"), (0.2, "eval")):
        positions = [i + offset for i in range(len(names))]
        stages.bar(positions, [found[split] for _, found in report.stages], width=0.4, label=split)
    stages.set_xticks(range(len(names)), names)
    stages.set(title="greedy mean score per stage", ylabel="score", ylim=(0, 1.05))
    stages.legend()
    figure.tight_layout()
    figure.savefig(to, dpi=110)
    plt.close(figure)
    return to


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sft-steps", type=int, default=Recipe.sft_steps)
    parser.add_argument("--grpo-steps", type=int, default=Recipe.grpo_steps)
    parser.add_argument("--out", default="runs/demo", help="trajectories and the plot (default: runs/demo)")
    options = parser.parse_args()
    recipe = Recipe(sft_steps=options.sft_steps, grpo_steps=options.grpo_steps)

    import torch

    from agent_env import load_bundle
    from agent_env.training.trl import AgentEnv

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    started, out, report = time.monotonic(), Path(options.out).resolve(), Report()
    work = out / "checkpoints"
    # TRL keeps an environment per rollout of a batch for each toolset, and each holds a session.
    toolsets = len({task.toolset.name for task in load_bundle(HARBOR).splits["train"]})
    sessions = recipe.grpo_batch * toolsets
    with AgentEnv.local(HARBOR, max_concurrent_envs=sessions, record=out / "training") as env:
        demonstrations = env.demonstrations("train")
        tokenizer = tokenizer_for(rendered(demonstrations), recipe.vocab)
        model = tiny_model(tokenizer, recipe)
        parameters = sum(p.numel() for p in model.parameters())
        print(f"{env}: {len(env.dataset)} train tasks, {len(demonstrations)} demonstrations", flush=True)
        print(f"a tiny Qwen3 of {parameters / 1e6:.2f}M parameters, a {len(tokenizer)}-token BPE", flush=True)
        report.stages.append(("untrained", scores(env.url, model, tokenizer, out, "untrained")))
        print(f"SFT: {recipe.sft_steps} steps on the demonstrations", flush=True)
        stage_started = time.monotonic()
        fine_tune(model, tokenizer, demonstrations, recipe, work)
        print(f"SFT done in {time.monotonic() - stage_started:.0f} s", flush=True)
        report.stages.append((f"SFT {recipe.sft_steps} steps", scores(env.url, model, tokenizer, out, "sft")))
        print(f"GRPO: {recipe.grpo_steps} steps through env.factory", flush=True)
        stage_started = time.monotonic()
        reinforce(model, tokenizer, env, recipe, work, report)
        print(f"GRPO done in {time.monotonic() - stage_started:.0f} s", flush=True)
        report.stages.append(("then GRPO", scores(env.url, model, tokenizer, out, "grpo")))
    print("\n" + stage_table(report))
    drawn = plot(report, out / "demo.png")
    print(f"\n{time.monotonic() - started:.0f} s in all; trajectories under {out}", flush=True)
    if drawn is not None:
        print(f"plot: {drawn}")


if __name__ == "__main__":
    main()
