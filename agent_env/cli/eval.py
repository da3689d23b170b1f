"""`agent-env eval`: measure a model served at an OpenAI-compatible endpoint on a split of a bundle.

The endpoint is checked before any episode (one line and exit 2 when it does not answer, refuses
the key or does not serve the model); a progress line goes to stderr, then the table to stdout.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(commands: Any) -> None:
    """The `eval` subcommand, on the `agent-env` parser's subparsers."""
    parser = commands.add_parser(
        "eval", help="play a split with a model at an OpenAI-compatible endpoint; per-task scores, pass@k"
    )
    parser.add_argument(
        "target", help="a bundle folder (served in this process) or an agent_env server's URL"
    )
    parser.add_argument("--split", default="eval", help="the split to play (default: eval)")
    parser.add_argument("-n", "--samples", type=_positive, default=1, help="plays of each task (default: 1)")
    parser.add_argument("--concurrency", type=_positive, default=16, help="episodes at once (default: 16)")
    parser.add_argument(
        "--max-tool-calls", type=_positive, help="tool calls a turn may make (default: no bound)"
    )
    parser.add_argument("--temperature", type=float, help="sampling temperature (default: the endpoint's)")
    parser.add_argument("--out", help="write results.json and the trajectories (JSON lines) to this folder")
    parser.add_argument("--model-url", required=True, help="the endpoint, e.g. http://127.0.0.1:8001/v1")
    parser.add_argument("--model", required=True, help="the model's name at the endpoint")
    parser.add_argument("--api-key-env", help="the environment variable holding the endpoint's API key")
    parser.add_argument("--max-retries", type=int, default=3, help="retries of a failed request (default: 3)")
    parser.add_argument("--token", help="the agent_env server's bearer token (default: $AGENTENV_TOKEN)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    err = sys.stderr
    try:
        from agent_env.eval import EndpointError, OpenAIPolicy, PlaySettings, Progress, evaluate
        from agent_env.training.trl.errors import ServerUnavailableError, UnknownSplitError
    except ImportError as exc:
        print(f"error: {exc}", file=err)
        return 1
    policy = OpenAIPolicy.from_env(
        args.model_url,
        args.model,
        api_key_env=args.api_key_env,
        temperature=args.temperature,
        max_retries=args.max_retries,
    )
    try:
        policy.check()
    except EndpointError as exc:
        print(f"error: {exc}", file=err)
        return 2

    def show(progress: Progress) -> None:
        mean = "-" if progress.mean_score is None else f"{progress.mean_score:.2f}"
        end = "\n" if progress.done == progress.total else ""
        print(
            f"\reval: {progress.done}/{progress.total} episodes, mean score {mean}, "
            f"{progress.errors} error{'s' if progress.errors != 1 else ''}",
            end=end,
            file=err,
            flush=True,
        )

    try:
        result = evaluate(
            args.target,
            policy,
            split=args.split,
            samples=args.samples,
            concurrency=args.concurrency,
            settings=PlaySettings(max_tool_calls=args.max_tool_calls),
            model=args.model,
            token=args.token,
            out=args.out,
            progress=show,
            extra_settings={
                "temperature": args.temperature,
                "model_url": args.model_url,
                "max_retries": args.max_retries,
            },
        )
    except (ServerUnavailableError, UnknownSplitError, ValueError) as exc:
        print(f"error: {exc}", file=err)
        return 2
    print(result.table())
    if result.errors:
        print(
            f"\n{result.errors} samples failed at the model's endpoint: counted as errors, not scored",
            file=err,
        )
    if args.out:
        print(f"\nresults.json and the trajectories are in {args.out}")
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value
