"""The exceptions of the core: one type per layer, each with a stable code callers can branch on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a bundle: where it is, what is wrong, and how to fix it."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class BundleError(Exception):
    """A bundle that cannot be loaded; it lists every problem found, not only the first."""

    code = "BUNDLE_INVALID"

    def __init__(self, bundle: str, problems: Iterable[Problem]) -> None:
        self.bundle = bundle
        self.problems = tuple(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in {bundle}"
        super().__init__("\n  ".join([head, *map(str, self.problems)]))


class EpisodeError(Exception):
    """A call on an episode that could not be carried out.

    `code` is stable: the server puts it on the wire and clients branch on it.
    """

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return f"{self.message} (code: {self.code})"


class ToolDefinitionError(Exception):
    """A tool whose schema cannot be built from its signature and docstring."""

    def __init__(self, tool: str, reasons: Iterable[str]) -> None:
        self.tool = tool
        self.reasons = tuple(reasons)
        self.line: int | None = None
        super().__init__("; ".join(f"tool '{tool}': {r}" for r in self.reasons))


class EnvDefinitionError(Exception):
    """An env class with tools whose schemas cannot be built; `errors` has one entry per tool."""

    def __init__(self, env: str, errors: Iterable[ToolDefinitionError]) -> None:
        self.env = env
        self.errors = tuple(errors)
        super().__init__(f"env '{env}': " + "; ".join(map(str, self.errors)))


class SandboxUnavailableError(RuntimeError):
    """A sandbox provider that cannot work here (no engine, no image); the message says how to fix it."""
