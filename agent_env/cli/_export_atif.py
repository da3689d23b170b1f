"""`agent-env export-atif RUNS --out DIR`: recorded trajectories as ATIF documents, for Harbor's and
NeMo's tools and OpenEnv.

One document per episode, at `DIR/<episode id>/agent/trajectory.json` (where a Harbor trial keeps its
agent's trajectory), then one summary line. A line that is not a trajectory is skipped and counted, the
first few named on stderr; a source that is not there or an `--out` that is a file is one line and
exit 2; a source without a single trajectory exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

SHOWN_SKIPS = 10
"""The most skipped lines named on stderr: the summary counts them all."""


def add_parser(commands: Any) -> None:
    """The `export-atif` subcommand, on the `agent-env` parser's subparsers."""
    parser = commands.add_parser(
        "export-atif",
        help="write recorded trajectories as ATIF (Harbor's Agent Trajectory Interchange Format, v1.7), "
        "one DIR/<episode id>/agent/trajectory.json each",
        epilog="exit codes: 0 written; 1 no trajectory in the source; 2 the source or --out cannot be used",
    )
    parser.add_argument(
        "source",
        metavar="RUNS",
        help="a folder of *.jsonl trajectory files (agent-env serve --record, agent-env eval --out) "
        "or one file",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="the folder to write in (made if missing)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from agent_env._atif import ATIF_VERSION, TRAJECTORY_FILE, export_atif

    shown = 0

    def skipped(file: Path, line: int, why: str) -> None:
        nonlocal shown
        shown += 1
        if shown <= SHOWN_SKIPS:
            where = f"{file}:{line}" if line else str(file)
            print(f"agent-env export-atif: skipped {where}: {why}", file=sys.stderr)

    try:
        done = export_atif(args.source, args.out, skipped=skipped)
    except OSError as exc:
        print(
            f"error: cannot write in {args.out} ({exc.strerror or exc}); pass another --out", file=sys.stderr
        )
        return 2
    count = len(done.written)
    lines = f", {done.skipped} line{'' if done.skipped == 1 else 's'} skipped" if done.skipped else ""
    if not count:
        print(f"agent-env export-atif: no trajectory in {args.source}{lines}", file=sys.stderr)
        return 1
    episodes = f"{count} episode{'' if count == 1 else 's'}"
    layout = f"{{id}}/{TRAJECTORY_FILE}"
    print(f"agent-env export-atif: {episodes} written to {args.out} as {ATIF_VERSION} ({layout}){lines}")
    return 0
