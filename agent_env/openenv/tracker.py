"""Every episode a server has begun and not yet torn down, and every teardown in flight.

Sessions end their episodes here, so a teardown outlives the call (or the connection) that started
it and nothing is lost: the session's next reset and its close wait for it, and the server's shutdown
tears down whatever is left and waits for all of it. Each episode is logged once, when it is gone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from agent_env.episode import EpisodeAPI
from agent_env.served import ServedTask

log = logging.getLogger("agent_env.openenv")


@dataclass(eq=False)
class EpisodeRecord:
    """One episode of a session, from its reset until it is torn down."""

    task: ServedTask
    episode: EpisodeAPI
    started: float = field(default_factory=time.monotonic)
    calls: int = 0
    outcome: str | None = None
    ended: float | None = None
    torn_down: bool = False

    def end(self, outcome: str) -> None:
        """Record how the episode ended (the first ending counts)."""
        if self.outcome is None:
            self.outcome = outcome
            self.ended = time.monotonic()

    def describe(self) -> str:
        spec = self.task.spec
        seconds = (self.ended or time.monotonic()) - self.started
        return (
            f"episode {spec.split}/{spec.index} {spec.id} [{spec.toolset.name}]: "
            f"{self.outcome or 'abandoned'} after {self.calls} call{'s' if self.calls != 1 else ''} "
            f"in {seconds:.2f}s"
        )


TEARDOWN_TIMEOUT_S = 120.0
"""The longest one episode's teardown may hold the server (its session's next reset, a shutdown):
past it the episode is counted gone and the failure logged. The Episode API's own teardown gives up
on each of its steps sooner (`RELEASE_TIMEOUT_S`)."""


class EpisodeTracker:
    """The server's live episodes and teardowns; used on the server's event loop only."""

    def __init__(self) -> None:
        self._live: set[EpisodeRecord] = set()
        self._teardowns: dict[EpisodeRecord, asyncio.Task[None]] = {}
        self.closing = False

    @property
    def live(self) -> int:
        """Episodes begun and not yet torn down (tearing down included)."""
        return len(self._live)

    @property
    def tearing_down(self) -> int:
        return len(self._teardowns)

    def begin(self, record: EpisodeRecord) -> None:
        self._live.add(record)

    def teardown(self, record: EpisodeRecord) -> asyncio.Future[None]:
        """Start the episode's teardown, once; the returned future is done when it is torn down."""
        task = self._teardowns.get(record)
        if task is not None:
            return task
        loop = asyncio.get_running_loop()
        if record.torn_down:
            gone: asyncio.Future[None] = loop.create_future()
            gone.set_result(None)
            return gone
        task = self._teardowns[record] = loop.create_task(self._tear_down(record))
        return task

    async def drain(self) -> None:
        """Tear down every live episode and wait for every teardown: the server is going away."""
        self.closing = True
        while self._live or self._teardowns:
            for record in list(self._live):
                record.end("abandoned: the server shut down")
                self.teardown(record)
            await asyncio.gather(*self._teardowns.values(), return_exceptions=True)

    async def _tear_down(self, record: EpisodeRecord) -> None:
        try:
            async with asyncio.timeout(TEARDOWN_TIMEOUT_S):
                await record.episode.teardown()
        except TimeoutError:
            log.error(
                "teardown of an episode of task '%s' took over %g s: given up on, it may leak",
                record.task.spec.id,
                TEARDOWN_TIMEOUT_S,
            )
        except Exception:
            # The Episode API's teardown never raises; a hand-built one might.
            log.exception("teardown of an episode of task '%s' raised", record.task.spec.id)
        finally:
            record.end("abandoned")
            record.torn_down = True
            self._live.discard(record)
            self._teardowns.pop(record, None)
            log.info("%s", record.describe())
