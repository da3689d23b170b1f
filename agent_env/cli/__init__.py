"""The `agent-env` command: check a bundle, list its tasks, play one, replay its reference plays, serve it,
measure a model on it (`eval`).

`sandbox-image` builds the image the Docker sandbox runs; `view` shows a folder of trajectories;
`export-atif` writes them as ATIF, for the tools that read Harbor's trajectory format.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import textwrap
import time
from collections.abc import Sequence

from agent_env._bundle.advice import reply_advice
from agent_env._bundle.reader import Bundle
from agent_env._concurrency import BUILD_CONCURRENCY_VARIABLE, default_concurrency
from agent_env._contracts.registry import sandbox_names, sandbox_provider
from agent_env._contracts.sandbox import SandboxProvider
from agent_env._contracts.sandbox_settings import DEFAULT_IMAGE
from agent_env._episode import Episode
from agent_env._error_types import AgentEnvError, BundleError
from agent_env._loading import load_bundle
from agent_env._replay import ReplayResult, load_solutions, replay_many
from agent_env._server_options import ServeOptions, ServerOptions, add_flags, doc, from_flags
from agent_env._table import table
from agent_env._task import Task
from agent_env._verifiers import verifier_labels
from agent_env.cli import _eval as eval_command, _export_atif as export_atif
from agent_env.cli._judging import add_judge_options, judging_of
from agent_env.cli._play import play_in_terminal
from agent_env.cli._skipping import add_skip_option, loaded
from agent_env.cli._token import add_token_options, token_of


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except BundleError as exc:
        print(f"BundleError: {exc}", file=sys.stderr)
        return 1
    except AgentEnvError as exc:  # the library's: a task that is not there, a sandbox that cannot run
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-env", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    check = commands.add_parser("check", help="load a bundle and report every problem in it")
    check.add_argument("bundle")
    _add_build_concurrency(check)
    check.set_defaults(run=_check)

    tasks = commands.add_parser("tasks", help="list a bundle's tasks: index, id, toolset, turns")
    tasks.add_argument("bundle")
    tasks.add_argument("--split", help="only this split (default: every split)")
    tasks.set_defaults(run=_tasks)

    play_ = commands.add_parser("play", help="play one task yourself in the terminal")
    play_.add_argument("bundle")
    play_.add_argument("--split", default="train")
    play_.add_argument("--index", type=int, default=0)
    play_.add_argument("--sandbox", choices=sandbox_names(), help="sandbox provider (default: the bundle's)")
    add_judge_options(play_)
    play_.set_defaults(run=_play)

    replay = commands.add_parser(
        "replay", help="play every task with the bundle's reference plays (solutions/) and print the scores"
    )
    replay.add_argument("bundle")
    replay.add_argument("--split", help="only this split (default: every split)")
    replay.add_argument("--sandbox", choices=sandbox_names(), help="sandbox provider (default: the bundle's)")
    replay.add_argument(
        "--verifier-output",
        action="store_true",
        help="print what every play's verifiers said (a test script's last lines), not only the WRONG ones'",
    )
    add_flags(replay, ServerOptions, "allow_internet")
    add_skip_option(replay)
    replay.add_argument(
        "--concurrency",
        type=_positive,
        default=default_concurrency(),
        metavar="N",
        help="tasks played at once; the table keeps the tasks' order (default: twice the cores, at most "
        f"8: {default_concurrency()} here)",
    )
    _add_build_concurrency(replay)
    add_judge_options(replay)
    replay.set_defaults(run=_replay)

    serve = commands.add_parser(
        "serve", help="serve a bundle over OpenEnv: the Task API and WebSocket sessions (the openenv extra)"
    )
    serve.add_argument("bundle")
    add_flags(serve, ServeOptions)
    add_token_options(serve, doc(ServeOptions, "token"))
    serve.set_defaults(run=_serve)

    eval_command.add_parser(commands)

    image = commands.add_parser(
        "sandbox-image",
        help="build the Docker sandbox's image (static bash and busybox from Debian) into the local engine",
    )
    image.add_argument("--tag", default=DEFAULT_IMAGE, help=f"the image's name (default: {DEFAULT_IMAGE})")
    image.set_defaults(run=_sandbox_image)

    view = commands.add_parser(
        "view", help="serve a page over a folder of trajectories: a table of episodes, each as a conversation"
    )
    view.add_argument("folder", metavar="DIR", help="a folder of *.jsonl trajectory files (or one file)")
    view.add_argument(
        "--port", type=int, default=8080, help="port to bind; 0 takes a free one (default: 8080)"
    )
    view.add_argument(
        "--host",
        help="address to bind (default: 127.0.0.1); another address serves every machine that reaches it",
    )
    view.set_defaults(run=_view)

    export_atif.add_parser(commands)
    return parser


def _add_build_concurrency(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--build-concurrency",
        type=_positive,
        metavar="N",
        help="Harbor tasks: images built at once at load, each build context once (default: "
        f"${BUILD_CONCURRENCY_VARIABLE}, else twice the cores, at most 8: {default_concurrency()} here)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number, 1 or more, got {text!r}")
    return value


def _sandbox_image(args: argparse.Namespace) -> int:
    from agent_env.sandbox._docker_image import build_sandbox_image

    image_id = build_sandbox_image(args.tag)
    print(f"agent-env: built {args.tag} ({image_id[:19]})")
    return 0


def _view(args: argparse.Namespace) -> int:
    from agent_env.cli._view import view

    return view(args.folder, host=args.host, port=args.port)


def _check(args: argparse.Namespace) -> int:
    bundle = load_bundle(args.bundle, build_concurrency=args.build_concurrency)
    splits = ", ".join(f"{name} {len(tasks)}" for name, tasks in bundle.splits.items())
    print(f"{bundle.name}: ok: {len(bundle.envs)} envs, {len(bundle.agents)} agents, tasks: {splits}")
    advice = reply_advice(task for split in bundle.splits for task in bundle.tasks(split))
    if advice is not None:
        print(f"note: {advice}")
    return 0


def _splits(bundle: Bundle, split: str | None) -> list[str]:
    if split is None:
        return list(bundle.splits)
    bundle.tasks(split)
    return [split]


def _tasks(args: argparse.Namespace) -> int:
    bundle = load_bundle(args.bundle)
    rows = [
        (split, task.index, task.id, task.toolset.name, _turns(task))
        for split in _splits(bundle, args.split)
        for task in bundle.tasks(split)
    ]
    print(table(("split", "index", "id", "toolset", "turns"), rows))
    return 0


def _turns(task: Task) -> str:
    """A task's turns as the table shows them: its fixed ones, and its simulated user's bound."""
    fixed = len(task.turns)
    return f"{fixed}+user<={task.max_turns}" if task.user is not None else str(fixed)


def _play(args: argparse.Namespace) -> int:
    bundle = load_bundle(args.bundle)
    task = bundle.task(args.split, args.index)
    judging = judging_of(args, bundle)
    score = asyncio.run(play_in_terminal(task, input, sys.stdout, sandbox=args.sandbox, judging=judging))
    return 0 if score is not None else 1


def _serve(args: argparse.Namespace) -> int:
    try:
        token = token_of(args, sys.stderr)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        from agent_env.openenv import serve
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        serve(args.bundle, from_flags(ServeOptions, args, token=token))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: every episode was torn down before uvicorn re-raised it
        return 130
    return 0


def _entry(head: str, body: str) -> str:
    """One play in a list below `replay`'s table: a line, then what it has to say indented under it."""
    return f"  {head}" + ("\n" + textwrap.indent(textwrap.dedent(body), "    ") if body else "")


def _sandbox_of(task: Task, sandbox: str | None, allow_internet: bool) -> str | SandboxProvider | None:
    """The sandbox a replayed task plays in: `--sandbox`'s, or the task's; with --allow-internet, a
    Docker one with a network for a task that asks for the internet, as `serve --allow-internet`
    gives it."""
    settings = task.sandbox_settings
    if allow_internet and settings.asks_network and (sandbox or settings.provider) == "docker":
        return sandbox_provider("docker", settings, allow_network=True)
    return sandbox


def _internet_note(bundle: Bundle, allowed: bool) -> str | None:
    """What replay says of the tasks that ask for the internet, as `serve`'s start line does."""
    asking = sum(task.sandbox_settings.asks_network for tasks in bundle.splits.values() for task in tasks)
    if not asking:
        return None
    if allowed:
        return f"{asking} tasks ask for the internet and get it (--allow-internet)"
    return f"{asking} tasks ask for the internet and run without it (--allow-internet gives it)"


def _replay(args: argparse.Namespace) -> int:
    bundle = loaded(args.bundle, args.skip_broken_tasks, sys.stderr, build_concurrency=args.build_concurrency)
    judging = judging_of(args, bundle)
    rows = []
    failures = unplayed = 0
    reasons: list[str] = []
    errors: list[str] = []
    said: list[str] = []
    plays = [
        (split, task, load_solutions(bundle, split).get(task.id))
        for split in _splits(bundle, args.split)
        for task in bundle.tasks(split)
    ]

    async def replay_all() -> list[ReplayResult]:
        episodes = [  # refused before any play
            Episode(task, provider=_sandbox_of(task, args.sandbox, args.allow_internet), judging=judging)
            for _, task, _ in plays
        ]
        turns = [script.turns if script else [] for _, _, script in plays]
        try:
            return await replay_many(list(zip(episodes, turns, strict=True)), concurrency=args.concurrency)
        finally:
            await judging.aclose()

    if (note := _internet_note(bundle, args.allow_internet)) is not None:
        print(f"note: {note}", file=sys.stderr)
    started = time.perf_counter()
    results = asyncio.run(replay_all())
    took = time.perf_counter() - started
    for (split, task, script), result in zip(plays, results, strict=True):
        expected = script.expected_score if script else None
        ok = expected is not None and result.score == expected
        nothing_to_check = script is None and result.error is None
        unplayed += nothing_to_check
        failures += not ok and not nothing_to_check
        verdict = "ok" if ok else (result.error or ("no solution" if script is None else "WRONG"))
        verifiers = verifier_labels(task.verifiers)
        played_as = f"{split}/{task.index} {task.id}"
        if verdict == "WRONG":
            reasons.append(_entry(f"{played_as}: {result.why(verifiers)}", result.said(verifiers)))
        elif args.verifier_output and result.said(verifiers):
            said.append(_entry(played_as, result.said(verifiers)))
        verdict, _, rest = verdict.partition("\n")  # a table row is one line: the rest below it
        if rest:
            errors.append(_entry(f"{played_as}: {verdict}", rest))
        rows.append(
            (
                split,
                task.index,
                task.id,
                task.toolset.name,
                result.tool_calls,
                result.score,
                expected,
                f"{result.seconds or 0.0:.2f}",
                verdict,
            )
        )

    print(table(("split", "index", "id", "toolset", "calls", "score", "expected", "seconds", "result"), rows))
    tasks = f"{len(rows)} task{'s' if len(rows) != 1 else ''}"
    print(f"\n{tasks} played in {took:.2f} s, up to {args.concurrency} at once")
    played = len(rows) - unplayed
    if reasons:
        print("\nwhy each WRONG one scored as it did:\n" + "\n".join(reasons))
    if errors:
        print("\neach failed one's error in full:\n" + "\n".join(errors))
    if said:
        print("\nwhat the verifiers said of the other plays:\n" + "\n".join(said))
    without = f"; {unplayed} without one, scored by their verifiers alone" if unplayed else ""
    print(f"\n{played - failures} of {played} tasks scored as their reference play expects{without}")
    return 1 if failures else 0
