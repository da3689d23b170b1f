"""Simulated users: a task's turns after its fixed ones, written as the agent's replies come in.

A task's `user` is either a function of the bundle's `users.py`, called as `NAME(context, **args)`
after each `end_turn` with the conversation so far and the envs (`UserContext`), or a chat model
playing a persona (`agent_env.users._chat`, the `users` extra). Either returns the next user message,
which `end_turn` answers with exactly as with a fixed next turn, or ends the task (None, or the chat
model's `STOP`), which then is verified and scored. `max_turns` bounds the turns, the fixed ones
included; `timeout_s` bounds each answer. A user that raises, outlasts its deadline or answers
something else than a message ends the episode unscored (`USER_FAILED`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_env._contracts.users import Conversation, UserFunction, UserMaker, UserModel
from agent_env._error_types import EpisodeError, ErrorCode
from agent_env._threads import run_in_own_thread

UserFunctionType = Callable[..., Any]
"""A bundle's user: `(context: Conversation, **args) -> str | None`, sync or async."""


@dataclass(frozen=True)
class SimulatedUser:
    """A task's user, checked: its settings and, for a function, the function itself (the engine's
    `agent_env._contracts.users.User`, registered as the part `users.simulated`)."""

    spec: UserFunction | UserModel
    function: UserFunctionType | None = field(default=None, repr=False)

    @property
    def kind(self) -> Literal["function", "model"]:
        return "function" if isinstance(self.spec, UserFunction) else "model"

    @property
    def max_turns(self) -> int:
        return self.spec.max_turns

    @property
    def label(self) -> str:
        """The user as an error names it."""
        if isinstance(self.spec, UserFunction):
            return f"user function '{self.spec.function}'"
        return f"user model '{self.spec.model}' at {self.spec.model_url}"

    async def next_message(self, context: Conversation) -> str | None:
        """The user's next message, or None to end the task; EpisodeError USER_FAILED saying why when
        it raises, outlasts `timeout_s` or answers anything but a message or None."""
        limit = self.spec.timeout_s
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                answer = await self._answer(context)
        except EpisodeError:
            raise
        except Exception as exc:
            if isinstance(exc, TimeoutError) and deadline.expired():
                raise self._failed(
                    f"did not answer within its timeout_s of {limit:g} s; raise the task's user.timeout_s"
                ) from None
            raise self._failed(f"raised {type(exc).__name__}: {exc}") from exc
        if answer is not None and not isinstance(answer, str):
            raise self._failed(
                f"returned {answer!r}; return the next message (a str), or None to end the task"
            )
        return answer

    async def _answer(self, context: Conversation) -> Any:
        if isinstance(self.spec, UserModel):
            from agent_env.users._chat import ask_user_model

            return await ask_user_model(self.spec, context.turns)
        assert self.function is not None
        if asyncio.iscoroutinefunction(self.function):
            return await self.function(context, **self.spec.args)
        # A thread of its own: a function that never returns holds none of the shared pool's.
        return await run_in_own_thread(self.function, context, **self.spec.args)

    def _failed(self, what: str) -> EpisodeError:
        return EpisodeError(
            ErrorCode.USER_FAILED, f"the simulated user ({self.label}) {what}: the episode ended unscored"
        )


REGISTERED: UserMaker = SimulatedUser
"""What this module registers (pyproject.toml), held to the engine's contracts by the type checker."""
