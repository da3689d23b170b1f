"""The online curriculum's `TrainerCallback`: its state saved with each checkpoint, restored when a
run resumes from one, and its table printed when training ends. A module of its own, since it
imports transformers (installed beside TRL), which the rest of the trainer's side does not need."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from transformers import TrainerCallback


class Kept(Protocol):
    """What the callback keeps: an `OnlineCurriculum` (typed here, so this module imports it not)."""

    def save(self, folder: str | Path) -> Path: ...

    def load(self, folder: str | Path) -> bool: ...

    def table(self, most: int = ...) -> str: ...


class CurriculumCallback(TrainerCallback):
    """Keeps `curriculum` with the trainer's checkpoints (see `OnlineCurriculum.callback`)."""

    def __init__(self, curriculum: Kept) -> None:
        self.curriculum = curriculum

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        """A run resumed from a checkpoint (its step is past 0) restores the curriculum it kept."""
        if state.global_step > 0:
            self.curriculum.load(Path(args.output_dir) / f"checkpoint-{state.global_step}")

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir():
            self.curriculum.save(folder)

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if state.is_world_process_zero:
            print(self.curriculum.table(), flush=True)
