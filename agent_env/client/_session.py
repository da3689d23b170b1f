"""One session on the server through OpenEnv's `GenericEnvClient`, every message within a deadline.

All sessions of a process share one event loop on a daemon thread, so hundreds of environments cost
one thread, not one each. Each message waits `GRACE_S` longer than the deadline it carries,
so the server (which answers a missed deadline at once) speaks first. A message that still gets no
answer, or a connection that drops, loses the session: OpenEnv's client would silently reconnect to
a fresh session with no episode, so the session is closed instead and the caller told.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from agent_env._error_types import AgentEnvError
from agent_env._private.openenv_client import error_frame, refused_for_token
from agent_env._private.openenv_core import GenericEnvClient
from agent_env.client._errors import ServerAtCapacityError, ServerUnavailableError
from agent_env.client._loop import Answer, ClientLoop
from agent_env.client._tokens import TOKEN_VARIABLE, bearer
from agent_env.client._wire import AgentEnvAction, AgentEnvObservation, held_without_client

GRACE_S = 5.0
"""How much longer than its deadline a message waits for the server's answer."""

CAPACITY_RETRY_S = 2.0
"""How long opening a session retries when the server is at its session limit."""

_CAPACITY_POLL_S = 0.05
_CLOSE_WAIT_S = 10.0

_T = TypeVar("_T")


class SessionLostError(AgentEnvError):
    """The session is gone: no answer in time, or the connection dropped. Its episode is lost."""


_LOOP = ClientLoop("agent-env-sessions")
"""OpenEnv's client picks its mode by the loop it is called on, so the work handed to it is a
coroutine that calls the client, not the coroutine of a call made on another thread."""


def on_session_loop(work: Coroutine[Any, Any, _T]) -> Answer[_T]:
    """Run `work` on the sessions' loop (a fleet reads its servers' status there, all at once)."""
    return _LOOP.submit(work)


class SessionClient:
    """One WebSocket session: opened (and checked) at once, then one message at a time."""

    def __init__(self, url: str, *, connect_timeout_s: float, token: str | None = None) -> None:
        self.url = url
        self._connect_timeout_s = connect_timeout_s
        self._client = GenericEnvClient(
            base_url=url, connect_timeout_s=connect_timeout_s, message_timeout_s=None, headers=bearer(token)
        )
        self.lost = False

    def open(self) -> None:
        """Connect, and make sure the server kept the session (at capacity it refuses it).

        A refusal for capacity is retried for `CAPACITY_RETRY_S`: a session closed a moment ago
        (the factory's own, say) frees its slot only once the server has ended it.
        """
        wait_s = self._connect_timeout_s + GRACE_S
        retry_until = time.monotonic() + CAPACITY_RETRY_S
        try:
            while True:
                try:
                    self._run(self._client.state, wait_s).result()
                    return
                except ServerRefusedError as refused:
                    if refused.code != "CAPACITY_REACHED" or time.monotonic() > retry_until:
                        raise
                time.sleep(_CAPACITY_POLL_S)
        except SessionLostError as lost:
            self.close()
            hint = ""
            if refused_for_token(str(lost)):
                hint = (
                    " (the server requires a bearer token: pass AgentEnv(url, token=...) or set "
                    f"{TOKEN_VARIABLE})"
                )
            raise ServerUnavailableError(f"cannot open a session on {self.url}: {lost}{hint}") from None
        except ServerRefusedError as refused:
            self.close()
            if refused.code == "CAPACITY_REACHED":
                raise ServerAtCapacityError(_at_capacity(self.url, refused.message)) from None
            raise ServerUnavailableError(
                f"the server at {self.url} refused a session: {refused.code}: {refused.message}"
            ) from None

    def reset(
        self, split: str, index: int, *, timeout_s: float, label: str | None = None
    ) -> Answer[AgentEnvObservation]:
        """Start an episode (its trajectory labelled `label`, if given); the future holds the server's
        answer (or a `SessionLostError`)."""
        labelled = {} if label is None else {"client": label}
        reset = functools.partial(
            self._client.reset, split=split, index=index, timeout_s=timeout_s, **labelled
        )
        return _LOOP.submit(self._observed(reset, timeout_s + GRACE_S))

    def step(self, action: AgentEnvAction, *, timeout_s: float) -> Answer[AgentEnvObservation]:
        """Send one step whose deadline is `timeout_s`; the future holds the answer."""
        step = functools.partial(self._client.step, action.wire())
        return _LOOP.submit(self._observed(step, timeout_s + GRACE_S))

    def close(self) -> None:
        """Close the connection (the server then tears down the session's episode); never raises."""
        close_sessions([self])

    async def _observed(self, send: Callable[[], Awaitable[Any]], wait_s: float) -> AgentEnvObservation:
        result = await self._within(send, wait_s)
        observation: AgentEnvObservation = AgentEnvObservation.model_validate(
            {**result.observation, "reward": result.reward, "done": result.done}
        )
        return observation

    def _run(self, send: Callable[[], Awaitable[_T]], wait_s: float) -> Answer[_T]:
        return _LOOP.submit(self._within(send, wait_s))

    async def _within(self, send: Callable[[], Awaitable[_T]], wait_s: float) -> _T:
        """What `send()`, called on the loop, answers within `wait_s`."""
        if self.lost:
            raise SessionLostError("the session was lost before this call")
        deadline = asyncio.timeout(wait_s)  # in this task: wait_for would start one more per message
        try:
            async with deadline:
                return await send()
        except TimeoutError:
            self.lost = True
            if not deadline.expired():
                raise SessionLostError("the connection timed out") from None
            raise SessionLostError(f"the server sent no answer within {wait_s:g} s") from None
        except RuntimeError as exc:
            if frame := error_frame(exc):
                raise ServerRefusedError(frame.code, frame.message) from None
            self.lost = True
            raise SessionLostError(f"{type(exc).__name__}: {exc}") from None
        except Exception as exc:
            self.lost = True
            raise SessionLostError(f"the connection failed: {type(exc).__name__}: {exc}") from None


class ServerRefusedError(AgentEnvError):
    """An OpenEnv error frame: the server refused the message (or the whole session). Its code is
    OpenEnv's own (`CAPACITY_REACHED`, `VALIDATION_ERROR`, ...), not one of `ErrorCode`."""

    code: str


def _at_capacity(url: str, message: str) -> str:
    """What to do about a server at its session limit: raise the limit, unless sessions outlived their
    clients (the server's message says how many), which only a restart frees."""
    full = f"the server at {url} is at its session limit ({message})."
    if stranded := held_without_client(message):
        one = stranded == 1
        return (
            f"{full} {stranded} of its sessions {'is' if one else 'are'} held with no client connected, "
            f"which no client can free: restarting the server frees {'it' if one else 'them'}. That is a "
            "bug of agent_env's server: please report it, with what the server's GET /<bundle>/status "
            "answers"
        )
    return (
        f"{full} TRL keeps an environment for each rollout of a generation batch, per toolset, and "
        "each holds a session: raise the limit to at least the generation batch's rollouts times the "
        "toolsets it may use, with MAX_CONCURRENT_ENVS=N (or --max-concurrent-envs N) for "
        "`agent-env serve`, or AgentEnv.local(..., max_concurrent_envs=N)"
    )


def close_sessions(sessions: Sequence[SessionClient]) -> None:
    """Close sessions all at once, within `_CLOSE_WAIT_S` in all, however many there are; never raises."""
    if not sessions:
        return

    async def close_all() -> None:
        await asyncio.gather(*(session._client.close() for session in sessions), return_exceptions=True)

    with contextlib.suppress(Exception):
        _LOOP.submit(close_all()).result(_CLOSE_WAIT_S)
