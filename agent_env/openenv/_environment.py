"""`AgentEnvEnvironment`: the OpenEnv Environment of a served bundle.

OpenEnv makes one per WebSocket session, and throwaway ones for the Task API routes; making one is
cheap and does nothing. The session's work (episodes, deadlines) is `EpisodeSession`'s; this class adapts it
to OpenEnv: async reset and step on the server's loop, the Task API, and `close`, which OpenEnv
calls from the session's own thread when the connection ends, and which waits for the teardown.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

from fastapi import HTTPException, status

import agent_env
from agent_env._error_types import ErrorCode
from agent_env._errors import StateError
from agent_env._private.openenv_core import Environment, EnvironmentMetadata
from agent_env._served import ServedTask
from agent_env._specs import SolutionSpec
from agent_env.openenv._context import ServerContext, TaskLookupError
from agent_env.openenv._episode_session import EpisodeSession
from agent_env.openenv._wire import AgentEnvAction, AgentEnvObservation, AgentEnvState

log = logging.getLogger("agent_env.openenv")

_Found = TypeVar("_Found")

_CLOSE_POLL_S = 0.5
"""How often a closing session checks, while it waits for its teardown, that the loop still runs."""


class AgentEnvEnvironment(Environment[AgentEnvAction, AgentEnvObservation, AgentEnvState]):
    """One session of a served bundle: at most one live episode, played over the WebSocket."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, context: ServerContext) -> None:
        super().__init__()
        self._context = context
        self._session = EpisodeSession(context)
        self._loop: asyncio.AbstractEventLoop | None = None

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> AgentEnvObservation:
        """End the previous episode, deploy `split`/`index` within `timeout_s`, open its first turn."""
        self._loop = asyncio.get_running_loop()
        return await self._session.reset({"seed": seed, "episode_id": episode_id, **kwargs})

    async def step_async(
        self, action: AgentEnvAction, timeout_s: float | None = None, **kwargs: Any
    ) -> AgentEnvObservation:
        """Call a tool, end the turn or list the tools, within the deadline in the action's metadata.

        OpenEnv passes `timeout_s` only on its HTTP `/step`, which is not served (`NOT_SERVED_ROUTES`).
        """
        self._loop = asyncio.get_running_loop()
        return await self._session.step(action)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> NoReturn:
        raise StateError("AgentEnvEnvironment is asynchronous: OpenEnv's server calls reset_async")

    def step(self, action: AgentEnvAction, timeout_s: float | None = None, **kwargs: Any) -> NoReturn:
        raise StateError("AgentEnvEnvironment is asynchronous: OpenEnv's server calls step_async")

    @property
    def state(self) -> AgentEnvState:
        return self._session.state

    def close(self) -> None:
        """End the session's episode and wait until it is torn down.

        OpenEnv calls this from the session's thread, which may block; from the loop's own thread it
        only starts the teardown, which the server's tracker still waits for at shutdown.
        """
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if _running_loop() is loop:
            self._session.end()
            return
        try:
            done = asyncio.run_coroutine_threadsafe(self._session.close(), loop)
        except RuntimeError:  # the loop closed meanwhile: its shutdown tore the episode down
            return
        while True:
            try:
                done.result(timeout=_CLOSE_POLL_S)
                return
            except concurrent.futures.TimeoutError:
                if loop.is_closed() or not loop.is_running():
                    return
            except BaseException:
                log.exception("closing a session failed")
                return

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self._context.name,
            description=self._context.description or f"{self._context.name}: tasks served by agent_env",
            version=agent_env.__version__,
        )

    # The Task API: side-effect free, and answered from what the server already holds.

    def list_splits(self) -> list[str]:
        return list(self._context.served)

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return [_spec(task) for task in self._split(split)]

    def num_tasks(self, split: str) -> int:
        return len(self._split(split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return _spec(self._found(lambda: self._context.task(split, index)))

    def get_task_range(
        self, split: str, start: int | None = None, stop: int | None = None
    ) -> list[dict[str, Any]]:
        """The split's tasks from index `start` (default 0) up to `stop` (default: its end); an index
        past the end stops there, a negative one is refused (400), as `get_task` refuses it."""
        tasks = self._split(split)
        for name, bound in (("start", start), ("stop", stop)):
            if bound is not None and bound < 0:
                raise HTTPException(
                    status.HTTP_400_BAD_REQUEST,
                    f"{name} {bound} is negative: a range's start and stop are indices of "
                    f"{self._context.split_span(split)}, never negative; leave stop out for the rest of it",
                )
        return [_spec(task) for task in tasks[start:stop]]

    def list_solutions(self, split: str) -> list[SolutionSpec]:
        """The reference plays of the split's tasks that have one, in index order."""
        return [
            SolutionSpec(index=index, script=task.solution)
            for index, task in enumerate(self._split(split))
            if task.solution is not None
        ]

    def _split(self, split: str) -> Sequence[ServedTask]:
        return self._found(lambda: self._context.tasks(split))

    @staticmethod
    def _found(look_up: Callable[[], _Found]) -> _Found:
        """What `look_up` finds; a split or index the server lacks is the client's error (404, 400)."""
        try:
            return look_up()
        except TaskLookupError as missing:
            code = (
                status.HTTP_404_NOT_FOUND
                if missing.code == ErrorCode.UNKNOWN_SPLIT
                else status.HTTP_400_BAD_REQUEST
            )
            raise HTTPException(code, missing.message) from None


def _spec(task: ServedTask) -> dict[str, Any]:
    return task.spec.model_dump(mode="json")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
