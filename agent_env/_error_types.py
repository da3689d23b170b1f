"""The framework's errors: one root, one vocabulary of codes, one wording.

    AgentEnvError                     the root of every error agent_env raises (`agent_env._errors`);
                                      each keeps its built-in base (a ValueError, a RuntimeError, ...)
      AgentEnvError(code, message)    an error a caller or the wire branches on, by its ErrorCode
        EpisodeError                  a call on an episode that could not be carried out (the core)
        (the server's TaskLookupError and InterruptedCallError, the trainer's ServerRefusedError)
      BundleError                     a bundle that cannot be loaded: every problem, at once
      SplitNotFoundError (KeyError), TaskIndexError (IndexError)  a bundle's task that is not there
      ToolDefinitionError, EnvDefinitionError, SandboxUnavailableError (RuntimeError)
      ArgumentError (ValueError), ArgumentTypeError (TypeError)  an argument a caller gave that
                                      cannot be used; StateError (RuntimeError): a call on something
                                      closed, torn down or stopped; TimedOutError (TimeoutError):
                                      a wait past its time. No module raises a bare built-in.
      (and each area's own: the trainer's, eval's, MCP's, the viewer's, ...)

`ErrorCode` is every code an error observation can carry, with what it means and whether it ends
the episode; `validation_problems` words what pydantic found wrong with an input, the same way for
a bundle's files, a tool's arguments and a reset's.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agent_env._errors import (  # their home is a leaf: see there
    AgentEnvError as AgentEnvError,
    ArgumentError as ArgumentError,
    ArgumentTypeError as ArgumentTypeError,
    StateError as StateError,
    TimedOutError as TimedOutError,
)


class ErrorCode(enum.StrEnum):
    """Every code an error can carry, on an `AgentEnvError`, on the wire (a str, as OpenEnv's
    `WSErrorCode`) and in a trajectory's outcome; each says what it means, whether it ends the
    episode it happens in, and whether the server sends it (eval's own codes it never does)."""

    meaning: str
    ends_episode: bool
    on_wire: bool

    def __new__(cls, value: str, meaning: str, ends_episode: bool = False, on_wire: bool = True) -> ErrorCode:
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        member.ends_episode = ends_episode
        member.on_wire = on_wire
        return member

    BAD_REQUEST = (
        "BAD_REQUEST",
        "a reset's or a step's fields are missing, of the wrong type, contradict each other, or hold a "
        "string that is not valid Unicode",
    )
    UNKNOWN_SPLIT = "UNKNOWN_SPLIT", "reset named a split the server does not serve"
    INDEX_OUT_OF_RANGE = "INDEX_OUT_OF_RANGE", "reset named an index past the end of its split"
    NO_EPISODE = "NO_EPISODE", "a step came before any reset"
    NO_OPEN_TURN = (
        "NO_OPEN_TURN",
        "a step came after the episode ended (scored or failed); reset to play another",
    )
    ALREADY_DEPLOYED = "ALREADY_DEPLOYED", "deploy was called on an episode already deployed (the core only)"
    UNKNOWN_TOOL = "UNKNOWN_TOOL", "the tool is not one of the episode's"
    TOOL_NOT_ALLOWED = "TOOL_NOT_ALLOWED", "the tool exists but the played agent's role may not call it"
    INVALID_ARGUMENTS = (
        "INVALID_ARGUMENTS",
        "the arguments fail the tool's schema, or hold a string that is not valid Unicode",
    )
    TOOL_ERROR = "TOOL_ERROR", "the tool raised; the message is the tool's own"
    DEPLOY_FAILED = "DEPLOY_FAILED", "the task's envs or sandbox could not be made; the episode ended", True
    VERIFIER_FAILED = "VERIFIER_FAILED", "a verifier raised; the episode ended unscored", True
    SYSTEM_CHANGED = (
        "SYSTEM_CHANGED",
        "the agent changed the system's own files (its programs, libraries or configuration) that its "
        "task does not declare it may change, which its verifiers would run or read; the episode ended "
        "unscored, the changed paths named",
        True,
    )
    ENV_FAILED = (
        "ENV_FAILED",
        "an env's server (an MCP env's) stopped or broke during the episode; the episode ended",
        True,
    )
    USER_FAILED = (
        "USER_FAILED",
        "the task's simulated user raised, timed out or answered wrongly; the episode ended unscored",
        True,
    )
    DEADLINE_EXCEEDED = (
        "DEADLINE_EXCEEDED",
        "the call missed its deadline; the episode ended and is torn down after the reply",
        True,
    )
    CLIENT_GONE = "CLIENT_GONE", "the client disconnected during the call; the episode ended", True
    TORN_DOWN = "TORN_DOWN", "the episode was torn down while the call ran", True
    SHUTTING_DOWN = (
        "SHUTTING_DOWN",
        "the server is shutting down: it interrupted the call, or starts no new episode",
        True,
    )
    INTERNAL_ERROR = "INTERNAL_ERROR", "the episode raised something unexpected; the episode ended", True
    SESSION_LOST = (
        "SESSION_LOST",
        "eval's, never on the wire: the session with the server was lost (no answer in time, the "
        "connection dropped, the server refused it); the sample failed",
        True,
        False,
    )
    POLICY_ERROR = (
        "POLICY_ERROR",
        "eval's, never on the wire: the policy could not answer (its endpoint failed past its retries, "
        "or it raised); the sample is an error, not a score of 0",
        True,
        False,
    )


ENDING_CODES = frozenset(code for code in ErrorCode if code.ends_episode)
"""Codes of errors that end the episode they happen in (`code in ENDING_CODES` takes a plain str)."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a bundle: where it is, what is wrong, and how to fix it."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


@dataclass(frozen=True)
class SkippedTask:
    """A task left out of a load asked to skip the tasks that do not load (`load_bundle(path,
    skip_broken_tasks=True)`), so that one broken task does not stop a dataset: the task, named as
    its problems name it (a Harbor task's folder, `broken-task`; a task file's line,
    `tasks/train.jsonl:3`), and every problem found in it."""

    task: str
    problems: tuple[Problem, ...]


class BundleError(AgentEnvError):
    """A bundle that cannot be loaded; it lists every problem found, not only the first."""

    code = "BUNDLE_INVALID"

    def __init__(self, bundle: str, problems: Iterable[Problem]) -> None:
        self.bundle = bundle
        self.problems = tuple(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in {bundle}"
        super().__init__("\n  ".join([head, *map(str, self.problems)]))


class EpisodeError(AgentEnvError):
    """A call on an episode that could not be carried out; the server puts its code on the wire."""

    code: str


class ToolDefinitionError(AgentEnvError):
    """A tool whose schema cannot be built from its signature and docstring."""

    def __init__(self, tool: str, reasons: Iterable[str]) -> None:
        self.tool = tool
        self.reasons = tuple(reasons)
        self.line: int | None = None
        super().__init__("; ".join(f"tool '{tool}': {r}" for r in self.reasons))


class EnvDefinitionError(AgentEnvError):
    """An env class with tools whose schemas cannot be built (`errors`, one entry per tool), or whose
    `setup` declares a seed that cannot be validated (`seed`: its line and why)."""

    def __init__(
        self, env: str, errors: Iterable[ToolDefinitionError], seed: tuple[int, str] | None = None
    ) -> None:
        self.env = env
        self.errors = tuple(errors)
        self.seed = seed
        reasons = [*map(str, self.errors), *([seed[1]] if seed else [])]
        super().__init__(f"env '{env}': " + "; ".join(reasons))


class SandboxUnavailableError(AgentEnvError, RuntimeError):
    """A sandbox provider that cannot work here (no engine, no image); the message says how to fix it."""


class SplitNotFoundError(AgentEnvError, KeyError):
    """A bundle has no split of that name; the message names those it has."""


class TaskIndexError(AgentEnvError, IndexError):
    """A split has no task at that index; the message says how many it has."""


def validation_problems(
    exc: ValidationError, *, noun: str, known: Iterable[str] | None = None, tags: Container[str] = ()
) -> list[str]:
    """What pydantic found wrong with an input, one sentence per error, each naming the `noun`
    (`field`, `argument`) it is about; `known` lists the names an unknown one could have been.

    `tags` are discriminated unions' tags, which pydantic puts in a location right after the union's
    own (a list index, a field) although they name no field the user wrote: such a part, not the
    last, is left out.
    """
    choices = f" ({noun}s: {', '.join(known) or 'none'})" if known is not None else ""
    sentences = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        where = ".".join(
            str(part) for n, part in enumerate(loc) if not (0 < n < len(loc) - 1 and part in tags)
        )
        what = f"{noun} '{where}'" if where else "the input"
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "missing":
            sentences.append(f"{what} is required")
        elif error["type"] == "extra_forbidden":
            sentences.append(f"{what} is unknown{choices}; remove it or check its spelling")
        elif error["type"] == "union_tag_invalid":
            sentences.append(f"{what}: {message}")
        else:
            sentences.append(f"{what}: {message} (got {_shown(error.get('input'))})")
    return sentences


def _shown(value: Any) -> str:
    return json.dumps(value, default=repr)[:80]
