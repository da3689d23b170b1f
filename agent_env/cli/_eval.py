"""`agent-env eval`: measure a model on a split of a bundle, at an OpenAI-compatible endpoint or local.

With `--model-url`, `--model` is the model's name at that endpoint, which is checked before any
episode (one line and exit 2 when it does not answer, refuses the key or does not serve the model).
Without it, `--model` is a local Hugging Face model folder, loaded before any episode (one line and
exit 2 when it is not one). A progress line goes to stderr, then the table to stdout. A run in which
any sample was an error of the model's side (its endpoint failed, past its retries or its deadline)
exits 3: its results are written, but its mean is not a measure of the model.

`--policy` plays without a model: `reference` plays each task's reference play, `MODULE:NAME` a
policy of Python (`_policy.py`). The split is checked before any model or policy is made, so a wrong
`--split` is its own error, not the model's.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agent_env._bundle.reader import Bundle
from agent_env._error_types import AgentEnvError, ArgumentError
from agent_env._loading import names_a_bundle
from agent_env.cli._policy import REFERENCE, SPEC, python_policy, reference_policy
from agent_env.cli._skipping import FLAG as SKIP_FLAG, add_skip_option, loaded
from agent_env.cli._token import add_token_options, token_of

UNSOUND = 3
"""The exit code of a run with errors of the model's side: written, but not a measure of the model."""

EXIT_CODES = (
    "exit codes: 0 every sample was played (whatever it scored); 1 a missing extra; 2 the target, the "
    f"split or the model cannot play, before any episode; {UNSOUND} some samples were errors of the "
    "model's side (its endpoint failed, past --max-retries or --request-timeout): results are written, "
    "but the mean is not the model's"
)


def add_parser(commands: Any) -> None:
    """The `eval` subcommand, on the `agent-env` parser's subparsers."""
    parser = commands.add_parser(
        "eval",
        help="play a split with a model (an OpenAI-compatible endpoint's, or a local Hugging Face "
        "folder), or without one (--policy); per-task scores, pass@k",
        epilog=EXIT_CODES,
    )
    parser.add_argument(
        "target", help="a bundle folder (served in this process) or an agent_env server's URL"
    )
    parser.add_argument(
        "--split", help="the split to play (default: the target's one split when it has only one, else eval)"
    )
    parser.add_argument("-n", "--samples", type=_positive, default=1, help="plays of each task (default: 1)")
    parser.add_argument("--concurrency", type=_positive, default=16, help="episodes at once (default: 16)")
    parser.add_argument(
        "--max-tool-calls",
        type=_positive,
        help="tool calls a turn may make: then it ends, and the sample is scored as it stands (default: "
        "100, so that a model calling tools forever still ends)",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        help="sampling temperature (default: the endpoint's; a local model's: 0, greedy)",
    )
    parser.add_argument("--out", help="write results.json and the trajectories (JSON lines) to this folder")
    parser.add_argument(
        "--model-url", help="the endpoint, e.g. http://127.0.0.1:8001/v1 (none: --model is a local folder)"
    )
    playing = parser.add_mutually_exclusive_group(required=True)
    playing.add_argument(
        "--model",
        help="the model's name at --model-url, or without it a local Hugging Face model folder",
    )
    playing.add_argument(
        "--policy",
        metavar=f"{REFERENCE}|{SPEC}",
        help=f"play without a model: '{REFERENCE}' plays each task's reference play (a task without one "
        f"is left out, and named); {SPEC} plays NAME of a Python module (found as python -m finds it): "
        "policy(messages, tools) answering an agent_env.eval.AssistantMessage",
    )
    parser.add_argument(
        "--max-new-tokens",
        type=_positive,
        help=f"a local model's tokens per answer (default: {_DEFAULTS['max_new_tokens']})",
    )
    parser.add_argument(
        "--batch",
        type=_positive,
        metavar="N",
        help="a local model's: generate for up to N episodes at once; use with --concurrency N (default: 1)",
    )
    parser.add_argument("--api-key-env", help="the environment variable holding the endpoint's API key")
    parser.add_argument(
        "--max-retries", type=int, help=f"retries of a failed request (default: {_DEFAULTS['max_retries']})"
    )
    parser.add_argument(
        "--request-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="each request to the endpoint has this long in all, its retries and its answer's body "
        f"included; past it, the sample is an error (default: {_DEFAULTS['request_timeout']:g})",
    )
    add_token_options(parser, "the agent_env server's bearer token (default: $AGENTENV_TOKEN, if set)")
    add_skip_option(parser)
    parser.set_defaults(run=run)


_DEFAULTS: dict[str, Any] = {"max_new_tokens": 512, "batch": 1, "max_retries": 3, "request_timeout": 300.0}
"""The model's options that have a default: None when not given, so that --policy can refuse them.
The policies' own defaults, written here because their modules import openai or torch, which building
the parser must not (tst/unit/cli/eval_defaults_test.py holds them equal)."""
_MODEL_OPTIONS = ("model_url", "api_key_env", "temperature", *_DEFAULTS)


def run(args: argparse.Namespace) -> int:
    err = sys.stderr
    try:
        token = token_of(args, err)
    except ValueError as exc:
        print(f"error: {exc}", file=err)
        return 2
    if args.skip_broken_tasks and not names_a_bundle(args.target):
        print(
            f"error: {SKIP_FLAG} leaves out the tasks of a bundle folder that do not load, and "
            f"{args.target} is not one: a server loaded its tasks when it started (serve it with "
            f"{SKIP_FLAG}), or give the bundle's folder",
            file=err,
        )
        return 2
    if args.policy is not None and (given := [o for o in _MODEL_OPTIONS if getattr(args, o) is not None]):
        flags = ", ".join(f"--{option.replace('_', '-')}" for option in given)
        print(f"error: --policy plays without a model, and {flags} are a model's: drop them", file=err)
        return 2
    for option, default in _DEFAULTS.items():
        if getattr(args, option) is None:
            setattr(args, option, default)
    try:
        from agent_env.eval import PlaySettings, Policy, Progress, TaskPolicies, evaluate
        from agent_env.eval._play import DEFAULT_MAX_TOOL_CALLS
        from agent_env.eval._run import DEFAULT_SPLIT
    except ImportError as exc:
        print(f"error: {exc}", file=err)
        return 1
    try:
        target, split = _target_and_split(args, token, err)
        policy: Policy | TaskPolicies = _policy(args, target, split, token)
    except ImportError as exc:
        print(f"error: {exc}", file=err)
        return 1
    except AgentEnvError as exc:  # the target, the split or the model cannot play
        print(f"error: {exc}", file=err)
        return 2
    extra_settings: dict[str, Any] = {"temperature": args.temperature}
    if args.policy is not None:
        extra_settings = {"policy": args.policy}
    elif args.model_url:
        extra_settings |= {
            "model_url": args.model_url,
            "max_retries": args.max_retries,
            "request_timeout_s": args.request_timeout,
        }
    else:
        extra_settings |= {"max_new_tokens": args.max_new_tokens, "batch": args.batch}

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
            target,
            policy,
            split=split,
            samples=args.samples,
            concurrency=args.concurrency,
            settings=PlaySettings(max_tool_calls=args.max_tool_calls or DEFAULT_MAX_TOOL_CALLS),
            model=args.model if args.policy is None else args.policy,
            token=token,
            out=args.out,
            progress=show,
            extra_settings=extra_settings,
        )
    except (AgentEnvError, ValueError) as exc:
        print(f"error: {exc}", file=err)
        return 2
    finally:
        if callable(close := getattr(policy, "close", None)):
            close()  # an endpoint's connections, closed on the loop that opened them
    if args.split is None and result.split != DEFAULT_SPLIT:
        print(f"eval: played split '{result.split}', the only split {args.target} has", file=err)
    if left_out := getattr(policy, "left_out", None):
        print(
            f"eval: {len(left_out)} task{'s' if len(left_out) != 1 else ''} of split '{split}' "
            f"{'have' if len(left_out) != 1 else 'has'} no reference play, left out: {', '.join(left_out)}",
            file=err,
        )
    print(result.table())
    if args.out:
        print(f"\nresults.json and the trajectories are in {args.out}")
    if not result.errors:
        return 0
    if args.policy is not None:
        where = f"in the policy {args.policy}"
    else:
        where = "at the model's endpoint" if args.model_url else "in the model's generation"
    samples = "sample" if result.errors == 1 else "samples"
    print(f"\n{result.errors} {samples} failed {where}: errors, not scored, because:", file=err)
    reasons = dict.fromkeys(t.outcome.reason for t in result.trajectories if t.outcome.kind == "error")
    for reason in list(reasons)[:_REASONS_SHOWN]:
        print(f"  {reason[:_REASON_CHARS]}", file=err)
    if len(reasons) > _REASONS_SHOWN:
        print(
            f"  and {len(reasons) - _REASONS_SHOWN} other reasons (each error's trajectory says it)", file=err
        )
    what = "the policy's" if args.policy is not None else "the model's"
    print(f"the run is unsound, the mean is not {what}: exit {UNSOUND}", file=err)
    return UNSOUND


def _target_and_split(args: argparse.Namespace, token: str | None, err: Any) -> tuple[Bundle | str, str]:
    """The target to play (a bundle folder loaded here, once) and the split, checked before any model
    loads: a wrong `--split` is its own error, not a model's that took minutes to load."""
    from agent_env.eval._run import DEFAULT_SPLIT

    target: Bundle | str
    if names_a_bundle(args.target):
        target = loaded(args.target, args.skip_broken_tasks, err)
        splits = list(target.splits)
    else:
        from agent_env.client._taskapi import TaskAPI

        target = args.target
        api = TaskAPI(args.target, token=token)
        try:
            splits = api.splits()
        finally:
            api.close()
    listed = ", ".join(splits) or "none"
    if args.split is None:
        split = splits[0] if len(splits) == 1 else DEFAULT_SPLIT
        if split not in splits:
            raise ArgumentError(
                f"{args.target} has no split '{DEFAULT_SPLIT}', the one eval plays by default: name one "
                f"of its splits with --split ({listed})"
            )
        return target, split
    if args.split not in splits:
        raise ArgumentError(
            f"--split {args.split}: {args.target} has no split '{args.split}'; name one of its "
            f"splits: {listed}"
        )
    return target, args.split


def _policy(args: argparse.Namespace, target: Bundle | str, split: str, token: str | None) -> Any:
    """What plays: `--policy`'s, or the model's, made (and checked) before any episode."""
    if args.policy == REFERENCE:
        return reference_policy(target, split, token)
    if args.policy is not None:
        return python_policy(args.policy)
    return _endpoint_policy(args) if args.model_url else _local_policy(args)


_REASONS_SHOWN = 3
_REASON_CHARS = 300


def _endpoint_policy(args: argparse.Namespace) -> Any:
    """The endpoint's policy, checked before any episode."""
    from agent_env.eval import OpenAIPolicy

    policy = OpenAIPolicy.from_env(
        args.model_url,
        args.model,
        api_key_env=args.api_key_env,
        temperature=args.temperature,
        max_retries=args.max_retries,
        request_timeout_s=args.request_timeout,
    )
    policy.check()
    return policy


def _local_policy(args: argparse.Namespace) -> Any:
    """The local folder's model, loaded before any episode (so a folder that is not one fails first)."""
    from agent_env.eval._hf_policy import TransformersPolicy

    return TransformersPolicy.from_folder(
        args.model,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature or 0.0,
        batch=args.batch,
    )


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, got {text}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value
