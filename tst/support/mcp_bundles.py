"""Bundles whose env is a real MCP server (`mcp_server.py`, over stdio or streamable HTTP on loopback),
and that HTTP server run as a process of its own, for every tier."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tst.support.waiting import WAIT_S

SERVER = Path(__file__).with_name("mcp_server.py").resolve()


def stdio_server(*args: str, **settings: Any) -> str:
    """The `[mcp.notes]` table of the notes server started over stdio, with `args` and more settings."""
    table = {"command": sys.executable, "args": [str(SERVER), *args], **settings}
    return _table(table)


def http_server(url: str, **settings: Any) -> str:
    """The `[mcp.notes]` table of a notes server reached at `url`."""
    return _table({"url": url, **settings})


def _table(settings: Mapping[str, Any]) -> str:
    lines = ["[mcp.notes]"]
    for key, value in settings.items():
        if isinstance(value, dict):
            pairs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{{pairs}}}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def a_notes_task(**fields: Any) -> dict[str, Any]:
    """A task of the scribe's (note 'milk'), scored by the notes the server lists, with `fields` replaced."""
    task = {
        "id": "note-milk",
        "agent": "scribe",
        "turns": ["Note that we need milk."],
        "verifiers": [{"type": "items", "env": "notes", "tool": "list_notes", "expected": ["milk"]}],
    }
    return {**task, **fields}


def notes_bundle(
    root: Path,
    server: str,
    *,
    tasks: Sequence[Mapping[str, Any]] | None = None,
    agent: str = 'envs = ["notes"]',
    solutions: Sequence[Mapping[str, Any]] | None = None,
    users: str | None = None,
    verifiers: str | None = None,
) -> Path:
    """A bundle at `root` whose scribe works with the notes server (`server`: its `[mcp.notes]` table)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.toml").write_text(f"[agents.scribe]\n{agent}\n\n{server}")
    (root / "tasks").mkdir(exist_ok=True)
    lines = tasks if tasks is not None else [a_notes_task()]
    (root / "tasks" / "train.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    if solutions is not None:
        (root / "solutions").mkdir(exist_ok=True)
        (root / "solutions" / "train.jsonl").write_text("".join(json.dumps(s) + "\n" for s in solutions))
    for name, source in (("users.py", users), ("verifiers.py", verifiers)):
        if source is not None:
            (root / name).write_text(textwrap.dedent(source))
    return root


NOTE_MILK = {"id": "note-milk", "turns": [{"calls": [{"tool": "add_note", "arguments": {"text": "milk"}}]}]}
"""The reference play of `a_notes_task()`."""


def hostile_server(*tools: str, **settings: Any) -> str:
    """The `[mcp.notes]` table of `mcp_server.py --hostile`: a server written by hand that lists `echo`
    and the hostile `tools` named (`mcp_server.HOSTILE_TOOLS`), over stdio."""
    return stdio_server("--hostile", ",".join(tools), **settings)


@contextmanager
def http_notes_server(*, hostile: bool = False) -> Iterator[HttpServer]:
    """`mcp_server.py --http` (or `--http-hostile`) as a process of its own on a free loopback port;
    killed after."""
    mode = "--http-hostile" if hostile else "--http"
    process = subprocess.Popen(
        [sys.executable, str(SERVER), mode], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().split()
        assert first[:1] == ["port"], f"the HTTP notes server did not say its port: {first}"
        yield HttpServer(process, f"http://127.0.0.1:{first[1]}/mcp")
    finally:
        process.kill()
        process.wait(WAIT_S)
        if process.stdout is not None:
            process.stdout.close()


class HttpServer:
    """The HTTP notes server's process and its endpoint."""

    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process = process
        self.url = url

    def kill(self) -> None:
        """Kill it as a crash would: no goodbye to any session."""
        self.process.kill()
        self.process.wait(WAIT_S)
