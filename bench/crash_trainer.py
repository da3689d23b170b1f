"""A trainer for the crash benchmark: it opens N sessions, starts a long bash command in each, waits.

    python -m bench.crash_trainer URL N

It prints `ready` once every command is sent; the benchmark then kills it with SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys

SLEEPER = "sleep 271828"
"""The command each episode is running when its trainer dies: easy to find among the processes."""
_GIVE_UP_S = 900


async def main(url: str, sessions: int) -> None:
    from openenv import GenericEnvClient

    clients = [GenericEnvClient(base_url=url, message_timeout_s=600) for _ in range(sessions)]
    await asyncio.gather(*(c.reset(split="train", index=1, timeout_s=300) for c in clients))
    bash = {"kind": "call_tool", "tool": "bash", "arguments": {"command": SLEEPER}}
    calls = [asyncio.ensure_future(c.step(bash)) for c in clients]
    await asyncio.sleep(0.5)
    print("ready", flush=True)
    await asyncio.wait_for(asyncio.gather(*calls), _GIVE_UP_S)  # the benchmark kills it long before


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
