"""The sandbox interface: where the played agent's `bash` commands run.

Every command has its own deadline and a cap on the output it returns; a sandbox is made at deploy
with the task's files in it and removed, whatever happened, at teardown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

DEFAULT_COMMAND_TIMEOUT_S = 30.0
KILL_MARGIN_S = 5.0
"""How long after a command's deadline its sandbox has answered (the command killed, its result sent)."""
DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024


@dataclass(frozen=True)
class CommandResult:
    """What a command did: its exit code (None when killed), its output, and why it was cut short."""

    exit_code: int | None
    output: str
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def render(self, timeout_s: float) -> str:
        """The result as the played agent reads it."""
        if self.timed_out:
            status = f"[killed: the command ran past its {timeout_s:g} s deadline]"
        elif self.exit_code is None:
            status = "[killed: the shell that ran the command ended under it]"
        else:
            status = f"[exit code: {self.exit_code}]"
        return f"{self.output}\n{status}" if self.output else status


class CappedOutput:
    """A command's output: the first `limit` bytes kept, the rest only counted, so a flood never blocks."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = max(0, self.limit - len(self.kept))
        self.kept += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more bytes]"
        return text


@runtime_checkable
class Sandbox(Protocol):
    """One episode's sandbox."""

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        """Run `command` with bash in the sandbox's working folder."""
        ...

    async def seal(self) -> None:
        """The agent's turns are over: end its shell and every process it left, raise EpisodeError
        SYSTEM_CHANGED if it changed the system's own files (where the sandbox can tell), and run every
        later command in a fresh shell of the verifiers' own (`agent_env.sandbox._sealing`). Called by
        the episode before its verifiers' first command; once is enough, later calls do nothing."""
        ...

    async def teardown(self) -> None:
        """Remove everything the sandbox made; never raises, safe to call twice."""
        ...


@runtime_checkable
class OnHost(Protocol):
    """A sandbox whose working folder is a folder of this host (the local one's): an MCP server the
    episode starts works in it, so the agent's bash and the server see the same files."""

    root: Path


class SandboxProvider(Protocol):
    """Makes sandboxes; `name` is how bundles and the CLI select it."""

    name: str

    async def create(self, files: Mapping[str, bytes]) -> Sandbox:
        """A new sandbox with `files` (relative paths, already checked) written into it."""
        ...


@runtime_checkable
class RunsWithServer(Protocol):
    """A provider with work of its own while a server runs (a warm pool, removals in the background):
    started as the server starts, on its event loop, and closed after its last teardown."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...
