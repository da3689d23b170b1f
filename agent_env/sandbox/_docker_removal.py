"""Removing sandbox containers: after their episode, in the background; at a server's start, those of
servers that died.

A teardown kills its container's processes at once and leaves the removal (the engine's slower
work) to `Removals`, so the next reset on the session need not wait for it. The removals run on
threads of their own, which the interpreter waits for at exit, and a server waits for them as it
shuts down: a container is never forgotten, only removed a little later.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from typing import Any

from agent_env.sandbox._docker_engine import SANDBOX_LABEL
from agent_env.sandbox._owner import HOST_LABEL, owner_alive, this_host

_WORKERS = 4
"""Removals at once: more only queue in the engine."""

log = logging.getLogger("agent_env.sandbox")


class Removals:
    """Containers being removed, on `_WORKERS` threads; `wait` returns once none is left."""

    def __init__(self) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(
            _WORKERS, thread_name_prefix="agent-env-removal"
        )
        self._pending: set[concurrent.futures.Future[None]] = set()
        self._lock = threading.Lock()

    def remove(self, container: Any) -> concurrent.futures.Future[None]:
        """Remove `container` (and its volumes) soon, whatever state it is in."""
        future = self._executor.submit(_remove, container)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    async def wait(self) -> None:
        """Return once every removal asked for so far has ended."""
        with self._lock:
            pending = list(self._pending)
        if pending:
            await asyncio.gather(*(asyncio.wrap_future(f) for f in pending), return_exceptions=True)

    def _done(self, future: concurrent.futures.Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)


def _remove(container: Any) -> None:
    import docker.errors

    try:
        container.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass  # already gone
    except Exception as exc:
        log.warning("could not remove sandbox container %s: %s", container.id[:12], exc)


def remove_orphans(client: Any) -> int:
    """Remove the sandbox containers on this host whose server no longer runs; how many there were."""
    listed = client.api.containers(
        all=True, filters={"label": [SANDBOX_LABEL, f"{HOST_LABEL}={this_host()}"]}
    )
    orphans = [c["Id"] for c in listed if not owner_alive(c.get("Labels") or {})]
    for container in orphans:
        with contextlib.suppress(Exception):
            client.api.remove_container(container, force=True, v=True)
    if orphans:
        log.info(
            "removed %d sandbox container(s) left by servers no longer running on this host", len(orphans)
        )
    return len(orphans)
