"""A warm pool of Docker sandboxes: containers started, each with its shell, before an episode asks.

Starting a container takes hundreds of milliseconds; handing out one already started takes a
command (`DockerSandbox.check`, which also proves it alive) and the task's files. Each container
serves one episode and is never reused: what one episode did never reaches another. The pool
refills in the background, `size` at most and `_STARTING` at a time, from the server's event loop;
a container that died while it waited is removed and replaced, never handed out. An episode that
finds the pool empty starts a container of its own, as without a pool.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Mapping

from pydantic import BaseModel, Field

from agent_env._errors import ArgumentError
from agent_env.sandbox._docker import DockerSandbox, DockerSandboxProvider

_STARTING = 2
"""Containers started at once: on a small machine, more only slow each other and the episodes."""
_RETRY_S = (0.5, 30.0)
"""The wait after a container failed to start, doubled after each failure in a row, up to the last."""

log = logging.getLogger("agent_env.sandbox")


class PoolStatus(BaseModel):
    """The warm pool, as `GET /{env_name}/status` shows it."""

    size: int = Field(description="Started containers the pool keeps ready, at most.")
    ready: int = Field(description="Containers started and waiting for an episode now.")
    starting: int = Field(description="Containers being started now, to refill it.")
    handed_out: int = Field(description="Episodes that got a container from the pool so far.")
    started_cold: int = Field(description="Episodes that found it empty and started their own.")
    replaced: int = Field(description="Containers that died while they waited, removed and replaced.")


class WarmPool:
    """A sandbox provider that hands out `provider`'s containers started ahead, `size` at most.

    A server `start`s it (from its event loop) and `close`s it as it shuts down, which removes the
    containers still waiting.
    """

    name = "docker"

    def __init__(self, provider: DockerSandboxProvider, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ArgumentError(f"a warm pool holds a whole number of containers, 1 or more, got {size!r}")
        self.provider = provider
        self.size = size
        self._ready: collections.deque[DockerSandbox] = collections.deque()
        self._starting = 0
        self._wake = asyncio.Event()
        self._refill: asyncio.Task[None] | None = None
        self._closed = False
        self._handed_out = self._started_cold = self._replaced = 0

    async def start(self) -> None:
        """Begin filling the pool, in the background of the running event loop (once the provider
        removed what dead servers left)."""
        await self.provider.start()
        if self._refill is None:
            self._refill = asyncio.get_running_loop().create_task(
                self._keep_full(), name="agent-env-warm-pool"
            )

    async def create(self, files: Mapping[str, bytes]) -> DockerSandbox:
        self.provider.check_room(files)
        while self._ready:
            sandbox = self._ready.popleft()
            self._wake.set()
            try:
                await sandbox.check()
            except Exception as exc:
                log.warning("warm pool: a waiting container died (%s); replacing it", exc)
                self._replaced += 1
                await sandbox.teardown()
                continue
            except BaseException:  # the deploy was cancelled: the container is nobody's now
                await sandbox.teardown()
                raise
            self._handed_out += 1
            await sandbox.put_files(files)
            return sandbox
        self._started_cold += 1
        return await self.provider.create(files)

    def status(self) -> PoolStatus:
        return PoolStatus(
            size=self.size,
            ready=len(self._ready),
            starting=self._starting,
            handed_out=self._handed_out,
            started_cold=self._started_cold,
            replaced=self._replaced,
        )

    async def close(self) -> None:
        """Stop refilling, remove every container still waiting or still starting, and wait for every
        removal. A start is never cancelled halfway: the engine would make its container all the same."""
        self._closed = True
        self._wake.set()
        if self._refill is not None:
            await self._refill
        while self._ready:
            await self._ready.popleft().teardown()
        await self.provider.close()

    async def _keep_full(self) -> None:
        """Start containers while the pool (with those starting) holds fewer than `size`, until closed."""
        starts: set[asyncio.Task[bool]] = set()
        failures = 0
        while not self._closed:
            while len(self._ready) + self._starting < self.size and self._starting < _STARTING:
                self._starting += 1
                starts.add(asyncio.ensure_future(self._start_one()))
            self._wake.clear()
            waker = asyncio.ensure_future(self._wake.wait())
            done, _ = await asyncio.wait({waker, *starts}, return_when=asyncio.FIRST_COMPLETED)
            waker.cancel()
            for start in done & starts:
                starts.discard(start)
                failures = 0 if start.result() else failures + 1
            if failures and not self._closed:
                with contextlib.suppress(TimeoutError):  # a close ends the wait
                    await asyncio.wait_for(
                        self._wake.wait(), min(_RETRY_S[0] * 2 ** (failures - 1), _RETRY_S[1])
                    )
        await asyncio.gather(*starts)

    async def _start_one(self) -> bool:
        """Start one container into the pool; whether it started. It stops counting as starting in
        the same step as it joins the ready ones, so the status never shows more than `size`."""
        try:
            sandbox = await self.provider.started()
        except Exception as exc:
            log.warning("warm pool: a container failed to start (%s); trying again", exc)
            return False
        finally:
            self._starting -= 1
        if self._closed:
            await sandbox.teardown()
        else:
            self._ready.append(sandbox)
        return True
