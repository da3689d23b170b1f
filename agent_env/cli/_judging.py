"""`--judge-url`, `--judge-model` and `--judge-cache`, the flags `serve`, `replay` and `play` share: the
endpoint and model every `judge` verifier of the bundle asks instead of its own, and a folder that keeps
their verdicts (`agent_env.judges.Judging`); each defaults to its environment variable."""

from __future__ import annotations

import argparse

from agent_env.bundle import Bundle
from agent_env.judges.judging import CACHE_VARIABLE, KEY_VARIABLE, MODEL_VARIABLE, URL_VARIABLE, Judging


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--judge-url",
        metavar="URL",
        help="the OpenAI-compatible endpoint every judge verifier asks, instead of its own; its key is "
        f"${KEY_VARIABLE} (default: ${URL_VARIABLE}, else each judge's url)",
    )
    parser.add_argument(
        "--judge-model",
        metavar="NAME",
        help=f"the model every judge verifier asks, instead of its own (default: ${MODEL_VARIABLE})",
    )
    parser.add_argument(
        "--judge-cache",
        metavar="DIR",
        help="keep the judges' verdicts in DIR, so an identical judgement is asked once, across runs "
        f"(default: ${CACHE_VARIABLE}, else memory alone)",
    )


def judging_of(args: argparse.Namespace, bundle: Bundle) -> Judging:
    """The judging the flags give, checked against the bundle's judges (an endpoint and a key each)."""
    judging = Judging.from_environment(url=args.judge_url, model=args.judge_model, cache=args.judge_cache)
    judging.admit(bundle.judges)
    return judging
