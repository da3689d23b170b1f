"""`--judge-url`, `--judge-model` and `--judge-cache`, the flags `serve`, `replay` and `play` share: the
endpoint and model every `judge` verifier of the bundle asks instead of its own, and a folder that keeps
their verdicts (`agent_env.judges.Judging`); each defaults to its environment variable."""

from __future__ import annotations

import argparse

from agent_env._bundle.reader import Bundle
from agent_env._server_options import ServerOptions, add_flags
from agent_env.judges._judging import Judging


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """The flags as `serve` takes them: the server's options (`agent_env._server_options`)."""
    add_flags(parser, ServerOptions, "judge_url", "judge_model", "judge_cache")


def judging_of(args: argparse.Namespace, bundle: Bundle) -> Judging:
    """The judging the flags give, checked against the bundle's judges (an endpoint and a key each)."""
    judging = Judging.from_environment(url=args.judge_url, model=args.judge_model, cache=args.judge_cache)
    judging.admit(bundle.judges)
    return judging
