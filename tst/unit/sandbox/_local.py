"""A local sandbox for one test: made, acted on, always torn down; its commands under a short deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from agent_env import CommandResult
from agent_env.sandbox import LocalSandbox, LocalSandboxProvider

DEADLINE_S = 2.0
CAP = 1024
ISOLATIONS = [
    pytest.param("none", id="unconfined"),
    pytest.param("bubblewrap", id="bubblewrap", marks=pytest.mark.needs("bubblewrap")),
]
"""Either way, what a command started must end with it: bubblewrap's process namespace changes how."""
T = TypeVar("T")


def in_sandbox(
    tmp_path: Path,
    act: Callable[[LocalSandbox], Awaitable[T]],
    files: dict[str, bytes] | None = None,
    *,
    isolation: str = "auto",
    max_file_mb: int | None = None,
) -> T:
    """Make a sandbox under `tmp_path`, run `act` on it, and always tear it down."""

    async def main() -> T:
        provider = LocalSandboxProvider(tmp_path, isolation=isolation, max_file_mb=max_file_mb)
        sandbox = await provider.create(files or {})
        try:
            return await act(sandbox)
        finally:
            await sandbox.teardown()

    return asyncio.run(main())


async def run(
    sandbox: LocalSandbox, command: str, *, timeout_s: float = DEADLINE_S, cap: int = CAP
) -> CommandResult:
    """`command`'s result in `sandbox`, under `DEADLINE_S` and `CAP` bytes of output unless told otherwise."""
    return await sandbox.run(command, timeout_s=timeout_s, max_output_bytes=cap)
