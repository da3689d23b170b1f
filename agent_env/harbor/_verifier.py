"""A Harbor task's verifier: after the last turn, tests/ is copied to /tests and test.sh runs as Harbor
runs it; the reward it writes is the score.

Its commands run once the sandbox is sealed (`agent_env.sandbox._sealing`): in a shell of their own,
with the image's /bin/bash, which the seal found unchanged; test.sh runs with that very bash (not
whichever `bash` comes first in PATH), and the reward files are read by that shell itself.

`/logs/verifier/reward.json` (named numbers) takes precedence over `/logs/verifier/reward.txt` (one
number). With reward.json, every named number is a component of the score, and the score is its
`reward` key; without one, reward.txt's number if it wrote that too (as Harbor does), else the mean of
the named numbers. A reward that is missing, empty, not a number or not finite, and a test.sh past
`[verifier] timeout_sec`, leave the episode unscorable (VERIFIER_FAILED: None to a trainer), never 0.

Before test.sh, once tests/ is copied in and /logs/verifier emptied of what the agent left there, the
task's `[[verifier.collect]]` commands run, each from the workdir within its own `timeout_sec`, as
Harbor runs them once the agent's phase is over: what they gather is test.sh's to read. One that fails
is said in the log (once per task and process), and test.sh still decides.

test.sh's output is kept, as Harbor keeps it, in `/logs/verifier/test-stdout.txt`; its last lines
are the judgement's `detail` (in the trajectory, `replay`, `play` and the viewer), so a 0 written by
a test.sh that could not run (no network to fetch its tools) shows why; an unscorable episode's
error ends with them.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import shlex
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent_env._contracts.sandbox import CommandResult
from agent_env._error_types import EpisodeError, ErrorCode
from agent_env._errors import AgentEnvError
from agent_env._output_tail import TAIL_BYTES, output_tail
from agent_env._verifiers import Judgement, ScoringContext

TESTS_DIR = "/tests"
LOGS_DIR = "/logs/verifier"
TEST_SCRIPT = f"{TESTS_DIR}/test.sh"
_CHUNK = 48 * 1024
"""Base64 sent per command (a command is one argument of at most 128 KiB to `bash -c`)."""
_STEP_TIMEOUT_S = 60.0
_BASH = "/bin/bash"
"""What runs test.sh: the bash the sandbox's shells are (`agent_env.sandbox._docker`)."""
_MISSING = 3
_COLLECT_FAILED: set[str] = set()
"""The tasks whose collect command's failure the log has said (once each, not once per episode)."""

TEST_OUTPUT = f"{LOGS_DIR}/test-stdout.txt"
"""test.sh's output (stdout and stderr), as Harbor keeps it; its end is the judgement's detail."""
_TAIL = f"tail -c {2 * TAIL_BYTES} {TEST_OUTPUT} 2>/dev/null"
"""What is read of test.sh's output: room for escape codes before `output_tail` bounds it."""
_ERROR_TAIL_LINES = 20
_ERROR_TAIL_BYTES = 2048

log = logging.getLogger("agent_env.harbor")


class RewardError(AgentEnvError, ValueError):
    """The reward files hold no score: what is wrong with them."""


@dataclass(frozen=True)
class Collect:
    """A `[[verifier.collect]]` command, and how long it may run."""

    command: str
    timeout_s: float


@dataclass(frozen=True)
class HarborTests:
    """How a task's tests run: their files (tests/, by relative path), its time limit, and where; the
    commands that collect what they read first."""

    task: str
    files: Mapping[str, bytes] = field(repr=False)
    timeout_s: float
    workdir: str
    env: Mapping[str, str] = field(default_factory=dict)
    collect: tuple[Collect, ...] = ()

    async def __call__(self, context: ScoringContext) -> Judgement:
        await self._copy_tests(context)  # and /logs/verifier emptied of what the agent left there
        await self._collect(context)
        exports = "".join(f"export {name}={shlex.quote(value)}; " for name, value in self.env.items())
        ran = await context.bash(  # its output is the end of test.sh's: no command more to read it
            f"{{ cd {shlex.quote(self.workdir)} && {exports}{_BASH} {TEST_SCRIPT}; }} > {TEST_OUTPUT} 2>&1; "
            f"{_TAIL}",
            self.timeout_s,
        )
        if ran.timed_out:
            raise self._unscorable(
                f"tests/test.sh ran past its [verifier] timeout_sec of {self.timeout_s:g} s",
                await self._log(context),
            )
        said = output_tail(ran.output)
        as_json = await _read(context, f"{LOGS_DIR}/reward.json")
        as_text = await _read(context, f"{LOGS_DIR}/reward.txt")
        try:
            judged = judge(as_json, as_text)
        except RewardError as exc:
            raise self._unscorable(str(exc), said) from None
        return replace(judged, detail=said)

    async def _collect(self, context: ScoringContext) -> None:
        """Run the task's collect commands in order; a failure is the log's, test.sh still decides."""
        for number, step in enumerate(self.collect, 1):
            done = await context.bash(f"cd {shlex.quote(self.workdir)} && {step.command}", step.timeout_s)
            if not done.ok and self.task not in _COLLECT_FAILED:
                _COLLECT_FAILED.add(self.task)
                log.warning(
                    "task '%s': its [[verifier.collect]] command %d failed (%s); test.sh ran all the same",
                    self.task,
                    number,
                    f"past its {step.timeout_s:g} s" if done.timed_out else _said(done),
                )

    async def _copy_tests(self, context: ScoringContext) -> None:
        encoded = base64.b64encode(_tar(self.files)).decode()
        staged = "/tmp/agent-env-tests.tar.b64"
        steps = [f"rm -rf {TESTS_DIR} {LOGS_DIR} {staged} && mkdir -p {TESTS_DIR} {LOGS_DIR}"]
        steps += [
            f"printf %s '{encoded[n : n + _CHUNK]}' >> {staged}" for n in range(0, len(encoded), _CHUNK)
        ]
        steps.append(f"set -o pipefail; base64 -d {staged} | tar -x -C {TESTS_DIR} && rm -f {staged}")
        for step in steps:
            done = await context.bash(step, _STEP_TIMEOUT_S)
            if not done.ok:
                raise EpisodeError(
                    ErrorCode.VERIFIER_FAILED,
                    f"task '{self.task}': could not copy tests/ to {TESTS_DIR} ({_said(done)}): the image "
                    "needs bash, base64 and tar, and a writable /tests and /tmp",
                )

    async def _log(self, context: ScoringContext) -> str:
        tail = await context.bash(_TAIL, _STEP_TIMEOUT_S)
        return output_tail(tail.output) if tail.ok else ""

    def _unscorable(self, why: str, log: str) -> EpisodeError:
        """The error of an episode without a reward, with test.sh's last lines (fewer than a judgement
        keeps: it is also the error a client gets and the line the server logs) on lines of their own."""
        log = output_tail(log, lines=_ERROR_TAIL_LINES, max_bytes=_ERROR_TAIL_BYTES)
        said = "; test.sh's output ends:\n" + textwrap.indent(log, "  ") + "\n" if log else " "
        return EpisodeError(
            ErrorCode.VERIFIER_FAILED,
            f"task '{self.task}' is unscorable: {why}{said}(an unscorable episode has no reward, never 0)",
        )


def judge(as_json: str | None, as_text: str | None) -> Judgement:
    """The score from the reward files' text (None: the file is missing); RewardError saying what is
    wrong when there is none to give."""
    if as_json is not None:
        if not as_json.strip():
            raise RewardError(f"{LOGS_DIR}/reward.json is empty")
        try:
            parsed: Any = json.loads(as_json)
        except ValueError:
            raise RewardError(f"{LOGS_DIR}/reward.json is not JSON: {as_json[:200]!r}") from None
        if not isinstance(parsed, dict):
            raise RewardError(f"{LOGS_DIR}/reward.json is not an object of named rewards: {as_json[:200]!r}")
        named = {
            str(key): float(value)
            for key, value in parsed.items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        }
        if not named:
            raise RewardError(f"{LOGS_DIR}/reward.json names no numeric reward: {as_json[:200]!r}")
        bad = [key for key, value in named.items() if not math.isfinite(value)]
        if bad:
            raise RewardError(f"{LOGS_DIR}/reward.json's {', '.join(bad)} is not a finite number")
        if "reward" in named:
            return Judgement(named["reward"], named)
        if as_text is not None:
            return Judgement(_number(as_text), named)
        return Judgement(math.fsum(named.values()) / len(named), named)
    if as_text is not None:
        return Judgement(_number(as_text))
    raise RewardError(f"test.sh wrote neither {LOGS_DIR}/reward.txt nor {LOGS_DIR}/reward.json")


def _number(text: str) -> float:
    if not text.strip():
        raise RewardError(f"{LOGS_DIR}/reward.txt is empty")
    try:
        value = float(text.strip())
    except ValueError:
        raise RewardError(f"{LOGS_DIR}/reward.txt is not a number: {text.strip()[:200]!r}") from None
    if not math.isfinite(value):
        raise RewardError(f"{LOGS_DIR}/reward.txt is not a finite number: {text.strip()[:200]!r}")
    return value


async def _read(context: ScoringContext, path: str) -> str | None:
    """A reward file's text, or None if test.sh did not write it."""
    read = await context.bash(f'[ -f {path} ] || exit {_MISSING}; printf %s "$(< {path})"', _STEP_TIMEOUT_S)
    if read.exit_code == _MISSING:
        return None
    if not read.ok:
        raise EpisodeError(ErrorCode.VERIFIER_FAILED, f"could not read {path}: {_said(read)}")
    return read.output


def _said(result: CommandResult) -> str:
    return f"exit {result.exit_code}: {result.output.strip()[:300]!r}"


def _tar(files: Mapping[str, bytes]) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for relative, content in sorted(files.items()):
            info = tarfile.TarInfo(relative)
            info.size, info.mode = len(content), 0o755 if relative.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()
