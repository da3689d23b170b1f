"""Every episode a server has begun and not yet torn down, and every teardown in flight.

Sessions end their episodes here, so a teardown outlives the call (or the connection) that started
it and nothing is lost: the session's next reset and its close wait for it, and the server's shutdown
tears down whatever is left and waits for all of it. Each episode is logged once, when it is gone,
and its trajectory made then (so it has its teardown's time), once, for the server's metrics and,
with a recorder, to be recorded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from agent_env._episode import Episode
from agent_env._episode_trajectory import trajectory_of
from agent_env._events import ToolCalled, TurnEnded
from agent_env._trajectory_recorder import TrajectoryRecorder

if TYPE_CHECKING:
    from agent_env.openenv._metrics import ServerMetrics

log = logging.getLogger("agent_env.openenv")


def describe(episode: Episode) -> str:
    """The line the server logs of an episode once it is gone."""
    task = episode.task
    calls = sum(1 for event in episode.events if isinstance(event, ToolCalled | TurnEnded))
    ended = episode.outcome.at if episode.outcome is not None else time.time()
    seconds = ended - (episode.started_at if episode.started_at is not None else ended)
    return (
        f"episode {task.split}/{task.index} {task.id} [{task.toolset.name}]: "
        f"{episode.outcome or 'abandoned'} after {calls} call{'s' if calls != 1 else ''} in {seconds:.2f}s"
    )


TEARDOWN_TIMEOUT_S = 120.0
"""The longest one episode's teardown may hold the server (its session's next reset, a shutdown):
past it the episode is counted gone and the failure logged. An Episode's own teardown gives up
on each of its steps sooner (`RELEASE_TIMEOUT_S`)."""


class EpisodeTracker:
    """The server's live episodes and teardowns; used on the server's event loop only.

    Each live episode maps to the label its client sent, which its trajectory carries.
    """

    def __init__(
        self, recorder: TrajectoryRecorder | None = None, *, metrics: ServerMetrics | None = None
    ) -> None:
        self.recorder = recorder
        self.metrics = metrics
        self._live: dict[Episode, str | None] = {}
        self._teardowns: dict[Episode, asyncio.Task[None]] = {}
        self.closing = False

    @property
    def live(self) -> int:
        """Episodes begun and not yet torn down (tearing down included)."""
        return len(self._live)

    @property
    def tearing_down(self) -> int:
        return len(self._teardowns)

    @property
    def live_sandboxes(self) -> int:
        """Sandboxes of live episodes (made, and not yet torn down with their episode)."""
        return sum(1 for episode in self._live if episode.sandbox is not None)

    def begin(self, episode: Episode, *, client: str | None = None) -> None:
        self._live[episode] = client

    def teardown(self, episode: Episode, reason: str = "") -> asyncio.Future[None]:
        """Start the episode's teardown, once, abandoning it for `reason` unless it already ended;
        the returned future is done when it is torn down."""
        episode.abandon(reason)
        task = self._teardowns.get(episode)
        if task is not None:
            return task
        loop = asyncio.get_running_loop()
        if episode not in self._live:
            gone: asyncio.Future[None] = loop.create_future()
            gone.set_result(None)
            return gone
        task = self._teardowns[episode] = loop.create_task(self._tear_down(episode))
        return task

    async def drain(self) -> None:
        """Tear down every live episode and wait for every teardown: the server is going away."""
        self.closing = True
        while self._live or self._teardowns:
            for episode in list(self._live):
                self.teardown(episode, "the server shut down")
            await asyncio.gather(*self._teardowns.values(), return_exceptions=True)

    async def _tear_down(self, episode: Episode) -> None:
        try:
            async with asyncio.timeout(TEARDOWN_TIMEOUT_S):
                await episode.teardown()
        except TimeoutError:
            log.error(
                "teardown of an episode of task '%s' took over %g s: given up on, it may leak",
                episode.task.id,
                TEARDOWN_TIMEOUT_S,
            )
        except Exception:
            # An Episode's teardown never raises; a subclass's might.
            log.exception("teardown of an episode of task '%s' raised", episode.task.id)
        finally:
            client = self._live.pop(episode, None)
            self._teardowns.pop(episode, None)
            if log.isEnabledFor(logging.INFO):
                log.info("%s", describe(episode))
            if self.recorder is not None or self.metrics is not None:
                self._account(episode, client)

    def _account(self, episode: Episode, client: str | None) -> None:
        """Count the episode in the metrics and record it, from one trajectory made for both."""
        try:
            trajectory = trajectory_of(episode, client=client)
            if self.metrics is not None:
                self.metrics.count(trajectory)
            if self.recorder is not None:
                self.recorder.record(trajectory)
        except Exception:  # a trajectory that cannot be made is lost, never the server
            log.exception("the trajectory of an episode of task '%s' could not be made", episode.task.id)
