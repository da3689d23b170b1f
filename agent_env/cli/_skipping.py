"""`--skip-broken-tasks`, the flag `serve`, `replay` and `eval` share: the tasks of a bundle that do not
load are left out, each listed with its first problem, so that one broken task of a dataset of
hundreds does not stop the run (`load_bundle(path, skip_broken_tasks=True)`). Off by default: a
broken task is news, and `check` lists every problem."""

from __future__ import annotations

import argparse
from typing import TextIO

from agent_env._bundle.reader import Bundle
from agent_env._loading import load_bundle
from agent_env._server_options import ServerOptions, add_flags

FLAG = "--skip-broken-tasks"


def add_skip_option(parser: argparse.ArgumentParser) -> None:
    """The flag as `serve` takes it: the server's option `skip_broken_tasks` (`agent_env._server_options`)."""
    add_flags(parser, ServerOptions, "skip_broken_tasks")


def loaded(path: str, skip: bool, out: TextIO, *, build_concurrency: int | None = None) -> Bundle:
    """The bundle at `path`, its tasks that do not load skipped when asked, and those said on `out`
    (a Harbor dataset's images built `build_concurrency` at once: `load_bundle`'s default if None)."""
    bundle = load_bundle(path, skip_broken_tasks=skip, build_concurrency=build_concurrency)
    if (summary := bundle.skipped_summary()) is not None:
        print(summary, file=out, flush=True)
    return bundle
