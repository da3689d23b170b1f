"""The token options `serve` and `eval` share: `--token` (shown in `ps`, so warned of) and `--token-file`.

A command line is readable by every user of the machine (`ps`, /proc); the environment variable
`AGENTENV_TOKEN` and a file are not, so those are the ways to give a token, and `--token` says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from agent_env._errors import ArgumentError

TOKEN_VARIABLE = "AGENTENV_TOKEN"  # agent_env.openenv._tokens' name, which the core cannot import


def add_token_options(parser: argparse.ArgumentParser, what: str) -> None:
    """`--token` and `--token-file`, one at most; `what` says what the token is for, and its default."""
    given = parser.add_mutually_exclusive_group()
    given.add_argument(
        "--token",
        help=f"{what}; visible to every user in `ps`: prefer ${TOKEN_VARIABLE} or --token-file",
    )
    given.add_argument(
        "--token-file", metavar="PATH", type=Path, help="read the token from PATH (its first line)"
    )


def token_of(args: argparse.Namespace, err: TextIO) -> str | None:
    """The token the options give (None: `AGENTENV_TOKEN`'s, if set); warns of `--token` on `err`.

    Raises ValueError, saying what to fix, for a token file that cannot be read or is empty.
    """
    if args.token is not None:
        print(
            f"agent-env: warning: --token shows in `ps` to every user of this machine; set "
            f"{TOKEN_VARIABLE} or pass --token-file PATH instead",
            file=err,
            flush=True,
        )
        token: str | None = args.token
        return token
    path: Path | None = args.token_file
    if path is None:
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ArgumentError(
            f"cannot read the token file {path}: {exc}; give a readable file or set {TOKEN_VARIABLE}"
        ) from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise ArgumentError(f"the token file {path} is empty: write the token on its first line")
    return token
