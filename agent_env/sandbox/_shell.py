"""A shell that lives in its sandbox for the episode, fed one command at a time.

Starting bash for every command (and, confined, bubblewrap) costs milliseconds each time; forking a
command from a shell already running costs about one. `DRIVER` is that shell. It reads each command
framed on its stdin (a fresh nonce, the command's length in bytes, the command) and runs it in the
background, with its output (stdout and stderr) on the shell's stdout after a start marker the
command's own process writes first. It waits for the command, kills what it left behind, and writes
the exit code after an end marker; both markers carry the nonce. What arrives before a command's
start marker was written by something an earlier command left behind, and is dropped.

A command past its deadline is killed by the shell, on the host's word: the host sends the shell
SIGUSR1, which ends its wait for the command; the shell kills the command as it would have after its
end, and writes its end marker; the shell goes on. Only a shell
that does not answer within `STOP_GRACE_S` is killed with its command, and the next command starts a
new one. A command can forge a marker only by guessing a nonce it was never given; at worst it
misreports its own result.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from agent_env._contracts.sandbox import KILL_MARGIN_S, CappedOutput, CommandResult
from agent_env._errors import AgentEnvError, StateError

DRIVER = r"""
exec 2>/dev/null
LC_ALL=C  # the shell's own: lengths in bytes; not exported, so commands keep LANG
mode=$1
if [ -n "$2" ]; then ulimit -f "$2" || exit 97; fi
if [ "$mode" = group ]; then set -m; fi
trap : USR1  # the host's "past its deadline": ends the wait below, and the command is killed
while IFS= read -r nonce && IFS= read -r size && IFS= read -r -N "$size" command; do
  # The command runs in this very bash (`$BASH`, named bash), not whichever one PATH finds first.
  (trap - USR1; printf '\001%s %d\n' "$nonce" "$BASHPID"; exec -a bash "$BASH" -c "$command") \
    </dev/null 2>&1 &
  pid=$!
  wait "$pid"
  status=$?
  if [ "$mode" = all ]; then
    # The command is this shell's own child: killed, it is reaped here (a wait ended by the host's
    # USR1 left it running). The rest, the init's now, again until none is left and the init reaped
    # them: a process forked while a kill went round (a fork bomb's) is caught by the next.
    end=$((SECONDS + 3))
    kill -9 -1
    wait "$pid"
    while kill -9 -1; do ((SECONDS < end)) || break; done
  else
    kill -9 -- "-$pid"
  fi
  printf '\000%s %d\n' "$nonce" "$status"
done
"""
"""bash, run as `bash -c DRIVER agent-env-shell MODE [FILE_KIB]`. MODE `group` (a shell among the
host's processes) runs each command as a process group of its own and kills that group after it;
`all` (a shell alone in a process namespace or a container) kills every process but itself and
pid 1, again and again until they are gone (reaped, for up to 2 to 3 seconds: one forked while a
kill went round is caught by the next), and only then answers, so the next command never sees
one of them dying. FILE_KIB, if given, caps the size of each file a command writes
(`ulimit -f`)."""

SHELL_NAME = "agent-env-shell"
STOP_GRACE_S = KILL_MARGIN_S / 2
"""How long a shell told to stop a command past its deadline has to answer, before it is killed: half
the sandbox's margin, the other half being for killing the shell."""


@dataclass(frozen=True)
class Started:
    """A command the shell started: its pid, as the shell sees it (in its own namespace, if any)."""

    pid: int


class Shell:
    """The host's side of one running `DRIVER`: commands written with `write`, its output read with
    `read` (which answers b"" once the shell's output ended), and a command past its deadline
    stopped with `interrupt` (which sends the shell SIGUSR1).

    A command whose shell ends under it, or one that its shell did not stop when told, leaves the
    shell `alive` False: it is then the caller's to kill (the command with it) and to replace.
    """

    def __init__(
        self,
        write: Callable[[bytes], Awaitable[None]],
        read: Callable[[], Awaitable[bytes]],
        interrupt: Callable[[], Awaitable[None]],
    ) -> None:
        self._write = write
        self._read = read
        self._interrupt = interrupt
        self._buffer = bytearray()
        self.alive = True
        self.started: Started | None = None
        """The command running now, once the shell said it started it."""

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        """Run one command to its end, past its deadline (`timed_out`), or until the shell ends
        (exit code None): with the output it wrote meanwhile, up to `max_output_bytes`."""
        data = command.encode()
        if b"\0" in data:
            return CommandResult(2, "bash: a command cannot contain a NUL character")
        nonce = secrets.token_hex(16).encode()
        output = CappedOutput(max_output_bytes)
        self.started = None
        try:
            async with asyncio.timeout(timeout_s):
                await self._write(nonce + b"\n" + str(len(data)).encode() + b"\n" + data)
                self.started = Started(int(await self._line_after(b"\x01" + nonce + b" ", None)))
                status = int(await self._line_after(b"\x00" + nonce + b" ", output))
        except (TimeoutError, _ShellEndedError, OSError, ValueError) as cut:
            timed_out = isinstance(cut, TimeoutError)
            if timed_out and await self._stopped(nonce, output):
                self.started = None
            else:  # `started` stays, for the caller that kills the shell to kill the command with it
                self.alive = False
                if self.started is not None:  # what the command wrote, up to its marker's possible start
                    output.add(bytes(self._buffer))
            return CommandResult(None, output.text(), timed_out=timed_out, truncated=output.dropped > 0)
        self.started = None
        return CommandResult(status, output.text(), truncated=output.dropped > 0)

    async def _stopped(self, nonce: bytes, output: CappedOutput) -> bool:
        """Whether the shell, told to, stopped the command it started and answered in time."""
        if self.started is None:
            return False
        try:
            async with asyncio.timeout(STOP_GRACE_S):
                await self._interrupt()
                await self._line_after(b"\x00" + nonce + b" ", output)
        except Exception:  # the signal could not be sent, or the shell did not answer: it is killed
            return False
        return True

    async def _line_after(self, marker: bytes, output: CappedOutput | None) -> bytes:
        """The rest of the line that starts with `marker`. What comes before it goes to `output`
        (or nowhere), all but a tail that may be the start of the marker, split between reads."""
        while True:
            at = self._buffer.find(marker)
            if at >= 0:
                end = self._buffer.find(b"\n", at + len(marker))
                if end >= 0:
                    if output is not None:
                        output.add(bytes(self._buffer[:at]))
                    line = bytes(self._buffer[at + len(marker) : end])
                    del self._buffer[: end + 1]
                    return line
            else:
                keep = len(marker) - 1
                if len(self._buffer) > keep:
                    if output is not None:
                        output.add(bytes(self._buffer[:-keep]))
                    del self._buffer[:-keep]
            chunk = await self._read()
            if not chunk:
                raise _ShellEndedError("the shell's output ended before the command's did")
            self._buffer += chunk


class _ShellEndedError(AgentEnvError):
    """The shell's output ended before the command's did."""


class _Running(Protocol):
    shell: Shell


_R = TypeVar("_R", bound=_Running)


class ShellSlot(Generic[_R]):
    """A sandbox's one running shell: `start`ed for its first command and again after a command that
    left it dead, `end`ed then and at `close`; commands one at a time."""

    def __init__(self, start: Callable[[], Awaitable[_R]], end: Callable[[_R], Awaitable[None]]) -> None:
        self._start = start
        self._end = end
        self._lock = asyncio.Lock()
        self.running: _R | None = None
        self.closed = False

    @property
    def busy(self) -> bool:
        """Whether a command runs (or waits to) now."""
        return self._lock.locked()

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        async with self._lock:
            if self.closed:
                raise StateError("the sandbox has been torn down")
            if self.running is None:
                self.running = await self._start()
            running = self.running
            try:
                return await running.shell.run(
                    command, timeout_s=timeout_s, max_output_bytes=max_output_bytes
                )
            finally:
                if not running.shell.alive or self.closed:
                    self.running = None
                    await self._end(running)

    async def close(self) -> None:
        """Take no more commands, and end the shell once the command running now, if any, answered
        (the caller makes sure it does soon: it kills the shell, or removes its container)."""
        self.closed = True
        async with self._lock:
            if self.running is not None:
                running, self.running = self.running, None
                await self._end(running)
