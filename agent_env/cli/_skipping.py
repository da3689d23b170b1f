"""`--skip-broken-tasks`, the flag `serve`, `replay` and `eval` share: the tasks of a bundle that do not
load are left out, each listed with its first problem, so that one broken task of a dataset of
hundreds does not stop the run (`load_bundle(path, skip_broken_tasks=True)`). Off by default: a
broken task is news, and `check` lists every problem."""

from __future__ import annotations

import argparse
from typing import TextIO

from agent_env.bundle import Bundle
from agent_env.loading import load_bundle

FLAG = "--skip-broken-tasks"
HELP = (
    "leave out the tasks that do not load (a Harbor task folder, a line of tasks/SPLIT.jsonl), listing "
    "each with its first problem, and run the others; problems no one task has still stop it "
    "(default: any problem stops it)"
)


def add_skip_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(FLAG, action="store_true", help=HELP)


def loaded(path: str, skip: bool, out: TextIO, *, build_concurrency: int | None = None) -> Bundle:
    """The bundle at `path`, its tasks that do not load skipped when asked, and those said on `out`
    (a Harbor dataset's images built `build_concurrency` at once: `load_bundle`'s default if None)."""
    bundle = load_bundle(path, skip_broken_tasks=skip, build_concurrency=build_concurrency)
    if (summary := bundle.skipped_summary()) is not None:
        print(summary, file=out, flush=True)
    return bundle
