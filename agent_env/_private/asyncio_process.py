"""asyncio's subprocess transport, which `asyncio.subprocess.Process` keeps private (`_transport`).

A command's output pipe stays open while anything holds it, a process that left the command's group
(setsid) included, and asyncio keeps the pipe, and the process's `wait()`, until it closes. Closing
the process's transport is the only way to let go of it, and `Process` offers no public way to reach
its transport. Where it has none, nothing is closed.
"""

from __future__ import annotations

import asyncio


def let_go_of_pipes(process: asyncio.subprocess.Process) -> None:
    """Close `process`'s pipes (its transport), whatever still holds their other ends."""
    transport: asyncio.SubprocessTransport | None = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()
