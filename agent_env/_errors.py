"""`AgentEnvError`, the root of every error agent_env raises, in a leaf module that imports nothing
heavy, so each module that defines an error (the trainer's side, the CLI's) can derive from it."""

from __future__ import annotations

from typing import overload

from agent_env._unicode import valid_text


class AgentEnvError(Exception):
    """The root of every error agent_env raises: `except AgentEnvError` catches any of them, and each
    keeps the built-in base it has always had (a `FleetMismatchError` is a `ValueError` too).

    `AgentEnvError(message)` reads as its message; `AgentEnvError(code, message)` carries a stable
    `code` (an `ErrorCode`, or OpenEnv's for a refusal) that callers and the wire branch on, and shows
    it. The message is always valid Unicode, whatever it quotes (a tool's exception)."""

    code: str | None = None
    """The code callers branch on; None for an error that needs none (its class says what it is)."""
    message: str
    _shows_code = False

    @overload
    def __init__(self, message: str, /) -> None: ...
    @overload
    def __init__(self, code: str, message: str, /) -> None: ...
    def __init__(self, first: str, message: str | None = None, /) -> None:
        self._shows_code = message is not None
        if message is None:
            message = first
        else:
            self.code = first
        self.message = valid_text(message)
        super().__init__(message)

    def __str__(self) -> str:
        return f"{self.message} (code: {self.code})" if self._shows_code else self.message


class ArgumentError(AgentEnvError, ValueError):
    """An argument a caller gave that cannot be used: the message says what to give instead."""


class ArgumentTypeError(AgentEnvError, TypeError):
    """An argument, or a use, of a type that cannot be taken: the message says what can."""


class StateError(AgentEnvError, RuntimeError):
    """A call on something that cannot take it now (closed, torn down, stopped, not yet entered): the
    message says what to do."""


class TimedOutError(AgentEnvError, TimeoutError):
    """Something agent_env waited for did not happen in time (a server that did not start or stop):
    the message says what and how long it waited. Still the TimeoutError callers catch."""
