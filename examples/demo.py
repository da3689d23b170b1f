"""The project's main job: a tiny model learns a skill and carries it to tasks it never saw, on the CPU.

    python examples/demo.py                   # make demo: offline; under 5 minutes on 2 idle cores
    python examples/demo.py --no-curriculum   #   with the offline filter alone
    python examples/demo.py --grpo-steps 100  # a longer GRPO stage (about 1 minute more)
    python examples/demo.py --from runs/demo --grpo-learning-rate 3e-4 --out runs/lr
                                              # GRPO again from that run's SFT model and samples

The bundle is the depot (`examples/depot`): 480 train tasks and 120 held-out ones (store, move or ship
labelled boxes), whose box labels never appear in training, so a held-out score measures the skill
(read the label, call the right tool), not answers learnt by heart; the train tasks in some wordings
have no reference play, so only GRPO can teach those. The loop practitioners run:
1. a tiny Qwen3 and a byte-level BPE tokenizer built here from the reference plays and the train
   prompts (nothing can be downloaded), which keeps a label's letter and its number tokens of their
   own, so a label never seen is made of known ones;
2. TRL's `SFTTrainer` on `env.demonstrations("train")`, the reference plays as the server answers them;
3. `agent_env.eval.evaluate` samples each train task K times: its pass rate, in `results.json`;
4. `env.dataset_for("train", pass_rate=(low, high), results=...)` keeps the tasks with signal, the
   ones the model solves sometimes: a group whose rollouts all score alike teaches GRPO nothing;
5. TRL's `GRPOTrainer` on them through `env.factory`, `GroupsWithSignal` logging the share of each
   step's groups whose rewards differ; then, from the same SFT model, GRPO again on the online
   curriculum (`env.curriculum("train")`, started from the same samples), which draws each group's
   task from every train task as the groups' scores come in (`--no-curriculum` skips it);
6. each stage measured greedily on the train split and the held-out split, in a table; a plot
   (`demo.png`: reward and groups with signal per GRPO step, scores per stage); and every trajectory
   under `--out`.
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(variable, "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' own renames, inside TRL

DEPOT = Path(__file__).resolve().parent / "depot"
SPLITS = ("train", "eval")
SFT_MODEL = "sft"
"""Where in `--out` a run keeps its SFT model and tokenizer, for `--from`."""
SFT_SCORES = "eval/sft"
SAMPLES = "eval/samples"
KEPT = (SFT_MODEL, SFT_SCORES, SAMPLES)
"""What a whole run leaves in its `--out` for a run `--from` it."""
LABEL_CHARACTERS = r"[A-Z](?=[0-9])|[0-9]+"
"""A label's letter and its number: tokens of their own, so a held-out label is made of known tokens."""


@dataclass(frozen=True)
class Recipe:
    """What the demo trains with: measured on a 2-core machine to fit the time (README)."""

    hidden: int = 128
    layers: int = 2
    vocab: int = 2048
    isolate: str | None = LABEL_CHARACTERS
    sft_steps: int = 600
    sft_batch: int = 8
    sft_learning_rate: float = 3e-3
    samples: int = 8
    temperature: float = 1.0
    pass_rate: tuple[float, float] = (0.1, 0.9)
    grpo_steps: int = 30
    grpo_batch: int = 32
    generations: int = 16
    grpo_learning_rate: float = 2e-4
    max_completion_length: int = 96
    max_tool_calling_iterations: int = 3
    max_new_tokens: int = 64
    max_tool_calls: int = 4
    eval_batch: int = 16
    eval_concurrency: int = 16
    gradient_checkpointing: bool = False
    """Off, unlike TRL's default: a tiny model on the CPU needs no memory saved, and recomputing the
    forward pass in the backward one only costs time (the rewards are the same, step for step)."""
    curriculum: bool = True
    """Also train GRPO from the same SFT model on the online curriculum, beside the offline filter."""
    seed: int = 0


@dataclass
class Report:
    """Each stage's greedy scores by split, the selection's counts, and the GRPO steps' logs."""

    stages: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    signal: list[float] = field(default_factory=list)
    signal_unfiltered: float | None = None
    curriculum_rewards: list[float] = field(default_factory=list)
    curriculum_signal: list[float] = field(default_factory=list)


def measure(
    url: str,
    model: Any,
    tokenizer: Any,
    recipe: Recipe,
    out: Path,
    *,
    split: str,
    samples: int = 1,
    temperature: float = 0.0,
) -> Any:
    """`evaluate` a split with the model: greedy, or `samples` seeded samples per task; the
    trajectories and results.json under `out`."""
    from agent_env.eval import PlaySettings, TransformersPolicy, evaluate

    model.eval()
    policy = TransformersPolicy(
        model,
        tokenizer,
        max_new_tokens=recipe.max_new_tokens,
        temperature=temperature,
        seed=recipe.seed,
        batch=recipe.eval_batch,
    )
    try:
        result = evaluate(
            url,
            policy,
            split=split,
            samples=samples,
            concurrency=recipe.eval_concurrency,
            settings=PlaySettings(max_tool_calls=recipe.max_tool_calls),
            model="tiny",
            out=out,
        )
    finally:
        model.train()
    unscored = [t for t in result.trajectories if t.outcome.kind != "scored"]
    if unscored:
        raise SystemExit(
            f"{len(unscored)} of {result.samples} episodes of the {split} split were not scored, so the "
            f"score would not be the model's; the first: {unscored[0].outcome.reason}"
        )
    return result


def scores(url: str, model: Any, tokenizer: Any, recipe: Recipe, out: Path, stage: str) -> dict[str, float]:
    """Greedy mean score per split, each split's trajectories under `out/eval/<stage>/<split>`."""
    folder = out / "eval" / stage.replace(" ", "-")
    return {
        split: measure(url, model, tokenizer, recipe, folder / split, split=split).mean_score or 0.0
        for split in SPLITS
    }


def fine_tune(model: Any, tokenizer: Any, demonstrations: Any, recipe: Recipe, work: Path) -> None:
    import datasets
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
        gradient_checkpointing=recipe.gradient_checkpointing,
        bf16=False,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        seed=recipe.seed,
    )
    datasets.disable_progress_bars()
    trainer = SFTTrainer(model=model, args=config, train_dataset=demonstrations, processing_class=tokenizer)
    trainer.remove_callback(_printer())
    trainer.train()


def reinforce(
    model: Any,
    tokenizer: Any,
    dataset: Any,
    factory: Any,
    recipe: Recipe,
    work: Path,
    logged: tuple[list[float], list[float]] | None = None,
    callbacks: tuple[Any, ...] = (),
) -> None:
    """GRPO on `dataset`; each step's reward and groups with signal appended to `logged` (two lists),
    when given."""
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
        temperature=recipe.temperature,
        beta=0.0,
        logging_steps=1,
        use_cpu=True,
        gradient_checkpointing=recipe.gradient_checkpointing,
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
        train_dataset=dataset,
        environment_factory=factory,
        callbacks=[GroupsWithSignal(), _step_table(*(logged or ([], []))), *callbacks],
    )
    trainer.remove_callback(_printer())
    trainer.train()


def _printer() -> Any:
    from transformers import PrinterCallback

    return PrinterCallback


def _step_table(rewards: list[float], signal: list[float]) -> Any:
    """A TrainerCallback that prints one line per GRPO step and keeps its reward and signal."""
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
                rewards.append(float(logs["reward"]))
                if logs.get("groups_with_signal") is not None:
                    signal.append(float(logs["groups_with_signal"]))
                cells = " ".join(f"{_number(logs.get(key)):>8}" for key, _ in columns)
                print(f"  {state.global_step:>4} {cells}", flush=True)

    return StepTable()


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3f}"


def with_signal(trajectories: Iterable[Any]) -> float | None:
    """The share of the tasks whose samples' scores differ: GRPO's groups with signal, had it trained
    on every task (a group being a task's samples, as many as GRPO's generations)."""
    from agent_env.training.trl import share_with_signal

    groups: dict[int, list[float | None]] = {}
    for trajectory in trajectories:
        groups.setdefault(trajectory.task.index, []).append(trajectory.score)
    shares = [share_with_signal(group, len(group)) for group in groups.values()]
    known = [share for share in shares if share is not None]
    return sum(known) / len(known) if known else None


def stage_table(report: Report) -> str:
    lines = [f"{'stage':<24}{'train split':>14}{'held-out split':>16}"]
    for stage, found in report.stages:
        lines.append(f"{stage:<24}{found['train']:>14.3f}{found['eval']:>16.3f}")
    return "\n".join(lines)


def plot(report: Report, to: Path) -> Path | None:
    """Reward and groups with signal per GRPO step, and each stage's scores; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, (rewards, signal, stages) = plt.subplots(1, 3, figsize=(15, 4))
    _per_step(rewards, report.rewards, "GRPO: mean reward per step", "reward", "offline filter")
    _per_step(signal, report.signal, "GRPO: groups with signal per step", "share of groups", "offline filter")
    if report.curriculum_rewards:
        _per_step(rewards, report.curriculum_rewards, "GRPO: mean reward per step", "reward", "curriculum")
        _per_step(
            signal,
            report.curriculum_signal,
            "GRPO: groups with signal per step",
            "share of groups",
            "curriculum",
        )
    if report.signal_unfiltered is not None:
        signal.axhline(report.signal_unfiltered, color="grey", linestyle="--", label="every train task")
        signal.legend(loc="lower right")
    names = [stage for stage, _ in report.stages]
    for offset, split, label in ((-0.2, "train", "train"), (0.2, "eval", "held-out")):
        positions = [i + offset for i in range(len(names))]
        stages.bar(positions, [found[split] for _, found in report.stages], width=0.4, label=label)
    stages.set_xticks(range(len(names)), [name.replace(", ", ",\n") for name in names])
    stages.set(title="greedy mean score per stage", ylabel="score", ylim=(0, 1.05))
    stages.legend()
    figure.tight_layout()
    figure.savefig(to, dpi=110)
    plt.close(figure)
    return to


def _per_step(axes: Any, values: list[float], title: str, label: str, run: str) -> None:
    axes.plot(range(1, len(values) + 1), values, marker=".", linewidth=1, label=f"{run}: step")
    window = 10
    if len(values) >= window:
        means = [sum(values[i - window : i]) / window for i in range(window, len(values) + 1)]
        axes.plot(range(window, len(values) + 1), means, linewidth=2, label=f"{run}: mean of {window}")
    axes.legend(loc="lower right")
    axes.set(title=title, xlabel="step", ylabel=label, ylim=(-0.05, 1.05))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bundle", default=str(DEPOT), help="the bundle (default: examples/depot)")
    parser.add_argument("--sft-steps", type=int, default=Recipe.sft_steps)
    parser.add_argument("--grpo-steps", type=int, default=Recipe.grpo_steps)
    parser.add_argument("--grpo-learning-rate", type=float, default=Recipe.grpo_learning_rate)
    parser.add_argument(
        "--generations",
        type=int,
        default=Recipe.generations,
        help="GRPO's rollouts per group (default: %(default)s)",
    )
    parser.add_argument("--samples", type=int, default=Recipe.samples, help="samples per train task (K)")
    parser.add_argument(
        "--pass-rate",
        type=float,
        nargs=2,
        metavar=("LOW", "HIGH"),
        default=Recipe.pass_rate,
        help="train with GRPO on the tasks whose pass rate lies within these bounds (default: %(default)s)",
    )
    parser.add_argument(
        "--no-curriculum",
        action="store_true",
        help="skip the second GRPO run, on the online curriculum from the same SFT model",
    )
    parser.add_argument("--seed", type=int, default=Recipe.seed, help="the run's seed (default: %(default)s)")
    parser.add_argument("--out", default="runs/demo", help="trajectories and the plot (default: runs/demo)")
    parser.add_argument(
        "--from",
        dest="start",
        metavar="RUN",
        help="start GRPO from an earlier run's SFT model and samples (its --out), skipping both: to try "
        "GRPO's settings from one SFT model",
    )
    options = parser.parse_args()
    out = Path(options.out).resolve()
    start = Path(options.start).resolve() if options.start else None
    if start is not None and start == out:
        parser.error(f"--from and --out are both {out}: the new run would overwrite the one it starts from")
    if start is not None and (missing := [part for part in KEPT if not (start / part).is_dir()]):
        parser.error(
            f"--from {start}: no {', '.join(missing)} there; pass the --out of a whole run of this demo "
            "(one made with --from keeps no SFT model of its own)"
        )
    if start is not None and (options.sft_steps, options.samples) != (Recipe.sft_steps, Recipe.samples):
        parser.error(
            "--sft-steps and --samples are the earlier run's with --from: drop them, or run the whole loop"
        )
    recipe = replace(
        Recipe(),
        sft_steps=options.sft_steps,
        grpo_steps=options.grpo_steps,
        grpo_learning_rate=options.grpo_learning_rate,
        generations=options.generations,
        samples=options.samples,
        pass_rate=tuple(options.pass_rate),
        curriculum=not options.no_curriculum,
        seed=options.seed,
    )
    run(Path(options.bundle), recipe, out, start=start)


def run(bundle: Path, recipe: Recipe, out: Path, *, start: Path | None = None) -> Report:
    """Every stage of the loop, each printed as it ends; the report they fill. With `start` (an
    earlier run's `--out`), its SFT model and samples instead of training and sampling again."""
    import torch

    from agent_env.training.trl import AgentEnv

    torch.manual_seed(recipe.seed)
    started, report = time.monotonic(), Report()
    # GRPOTrainer's environments hold their sessions while the process lives (TRL never closes them),
    # one trainer's after another's; the evaluations need their own.
    trainers = 2 if recipe.curriculum else 1
    sessions = trainers * recipe.grpo_batch + recipe.eval_concurrency
    with AgentEnv.local(bundle, max_concurrent_envs=sessions, record=out / "training") as env:
        print(f"{env}: {len(env.dataset)} train tasks, {len(env.dataset_for('eval'))} held-out", flush=True)
        if start is None:
            model, tokenizer, sampled = warm_up(env, recipe, out, report, started)
        else:
            model, tokenizer, sampled = resume(start, report)
        train(env, model, tokenizer, sampled, recipe, out, report, started)
    print("\n" + stage_table(report))
    if report.signal:
        print(
            f"groups with signal: {sum(report.signal) / len(report.signal):.2f} of GRPO's groups on the "
            f"tasks with signal, against {_number(report.signal_unfiltered)} over every train task"
        )
    if report.curriculum_signal:
        share = sum(report.curriculum_signal) / len(report.curriculum_signal)
        print(f"groups with signal on the online curriculum: {share:.2f} of GRPO's groups")
    drawn = plot(report, out / "demo.png")
    print(f"\n{time.monotonic() - started:.0f} s in all; trajectories under {out}", flush=True)
    if drawn is not None:
        print(f"plot: {drawn}")
    return report


def warm_up(env: Any, recipe: Recipe, out: Path, report: Report, started: float) -> tuple[Any, Any, Any]:
    """A tiny model and tokenizer, measured untrained; SFT on the reference plays, measured and saved
    in `out/sft` (for `--from`); then each train task sampled. Returns (model, tokenizer, samples)."""
    from agent_env.training.trl import tiny_model_for

    demonstrations = env.demonstrations("train")
    model, tokenizer = tiny_model_for(  # its tokenizer learns the undemonstrated wordings too
        env,
        "train",
        vocab=recipe.vocab,
        isolate=recipe.isolate,
        hidden=recipe.hidden,
        layers=recipe.layers,
        seed=recipe.seed,
    )
    parameters = sum(p.numel() for p in model.parameters())
    print(f"a tiny Qwen3 of {parameters / 1e6:.2f}M parameters, a {len(tokenizer)}-token BPE", flush=True)
    report.stages.append(("untrained", scores(env.url, model, tokenizer, recipe, out, "untrained")))

    _stage(f"SFT: {recipe.sft_steps} steps on {len(demonstrations)} demonstrations", started)
    fine_tune(model, tokenizer, demonstrations, recipe, out / "checkpoints")
    model.save_pretrained(out / SFT_MODEL)
    tokenizer.save_pretrained(out / SFT_MODEL)
    report.stages.append(
        (f"SFT {recipe.sft_steps} steps", scores(env.url, model, tokenizer, recipe, out, "sft"))
    )
    print(stage_table(report), flush=True)

    temperature = recipe.temperature
    _stage(f"pass rates: {recipe.samples} samples of each train task at temperature {temperature}", started)
    sampled = measure(
        env.url,
        model,
        tokenizer,
        recipe,
        out / SAMPLES,
        split="train",
        samples=recipe.samples,
        temperature=temperature,
    )
    report.signal_unfiltered = with_signal(sampled.trajectories)
    return model, tokenizer, sampled


def resume(start: Path, report: Report) -> tuple[Any, Any, Any]:
    """An earlier run's SFT model, its scores and its samples (its `--out`), to train GRPO again from
    them with other settings. Returns (model, tokenizer, samples)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agent_env import read_trajectories
    from agent_env.eval import EvalResult

    model = AutoModelForCausalLM.from_pretrained(start / SFT_MODEL)
    tokenizer = AutoTokenizer.from_pretrained(start / SFT_MODEL)
    found = {split: EvalResult.read(start / SFT_SCORES / split).mean_score or 0.0 for split in SPLITS}
    report.stages.append((f"SFT, from {start.name}", found))
    print(stage_table(report), flush=True)
    sampled = EvalResult.read(start / SAMPLES)
    report.signal_unfiltered = with_signal(read_trajectories(start / SAMPLES))
    tasks = len(sampled.tasks)
    print(f"pass rates: {sampled.samples} samples of {tasks} train tasks, from {start / SAMPLES}")
    return model, tokenizer, sampled


def train(
    env: Any,
    model: Any,
    tokenizer: Any,
    sampled: Any,
    recipe: Recipe,
    out: Path,
    report: Report,
    started: float,
) -> None:
    """GRPO on the offline filter's tasks, then from the same model on the online curriculum; each
    measured."""
    work = out / "checkpoints"
    low, high = recipe.pass_rate
    print(f"groups with signal, over every train task: {_number(report.signal_unfiltered)}", flush=True)
    try:
        chosen = env.dataset_for("train", pass_rate=recipe.pass_rate, results=sampled)
    except ValueError as exc:
        print(f"no GRPO stage: {exc}; train longer with --sft-steps, or widen --pass-rate", flush=True)
        return
    print(f"{len(chosen)} of {len(env.dataset)} train tasks have a pass rate within [{low}, {high}]")
    tuned = {name: value.detach().clone() for name, value in model.state_dict().items()}
    _stage(f"GRPO: {recipe.grpo_steps} steps on the {len(chosen)} tasks with signal", started)
    reinforce(model, tokenizer, chosen, env.factory, recipe, work, (report.rewards, report.signal))
    report.stages.append(("then GRPO, filter", scores(env.url, model, tokenizer, recipe, out, "grpo")))
    if not recipe.curriculum:
        return
    model.load_state_dict(tuned)  # the same SFT model, for a side-by-side comparison
    curriculum = env.curriculum("train", seed=recipe.seed)
    measured = curriculum.start_from(sampled)
    _stage(
        f"GRPO: {recipe.grpo_steps} steps on the online curriculum over all {len(env.dataset)} train "
        f"tasks, started from the samples of {measured}",
        started,
    )
    logged = (report.curriculum_rewards, report.curriculum_signal)
    reinforce(model, tokenizer, curriculum.dataset, env.factory, recipe, work, logged, (curriculum.callback,))
    after = scores(env.url, model, tokenizer, recipe, out, "grpo-curriculum")
    report.stages.append(("then GRPO, curriculum", after))


def _stage(title: str, started: float) -> None:
    print(f"\n== {title} (at {time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
