"""A task's `user` as its file declares it (pydantic alone): a function of the bundle's `users.py`, or a chat
model playing a persona, with the turns and the time each answer may take; and what the engine asks
of the user the `users` part makes of it (`User`, registered as `users.simulated`).

The `users` part reads these: `agent_env.users._simulated` (SimulatedUser, which plays them) and
`agent_env.users._chat` (the chat model's user, imported only when a model answers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

if TYPE_CHECKING:
    from agent_env._trajectory import TurnRecord

DEFAULT_MAX_TURNS = 10
DEFAULT_TIMEOUT_S = 60.0
STOP = "###STOP###"
"""What a chat model playing the user answers, alone or within its message, to end the task."""


class _UserConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turns: int = Field(
        DEFAULT_MAX_TURNS, ge=1, description="The most turns the task may have, its fixed ones included."
    )
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, description="Each answer's deadline.")


class UserFunction(_UserConfig):
    """`"user": {"function": NAME, "args": {...}}`: a function of the bundle's `users.py`."""

    function: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class UserModel(_UserConfig):
    """`"user": {"model_url": ..., "model": ..., "persona": ...}`: a chat model plays the user."""

    model_url: str = Field(pattern=r"^https?://", description="An OpenAI-compatible endpoint.")
    model: str = Field(min_length=1)
    persona: str = Field(min_length=1, description="Who the user is and what they want.")
    api_key_env: str | None = Field(None, description="The variable that holds the endpoint's key, if any.")
    temperature: float | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_retries: int = Field(2, ge=0, description="Retries of a failed request, within timeout_s.")


def _kind(value: Any) -> str | None:
    if isinstance(value, BaseModel):
        return "function" if isinstance(value, UserFunction) else "model"
    if not isinstance(value, dict):
        return None
    return "model" if "model_url" in value or "persona" in value else "function"


USER_KINDS = ("function", "model")
"""The tags of a task's `user`, as a location names them."""

UserSpec = Annotated[
    Annotated[UserFunction, Tag("function")] | Annotated[UserModel, Tag("model")],
    Discriminator(
        _kind,
        custom_error_type="user_form",
        custom_error_message='a user is {"function": NAME, "args": {...}} or {"model_url": URL, "model": '
        'NAME, "persona": TEXT}',
    ),
]
"""A task's `user`, told apart by its keys: `function`, or `model_url`, `model` and `persona`."""


class Conversation(Protocol):
    """What a simulated user is asked with (`agent_env._contexts.UserContext` is the episode's): typed here
    so that the user, which a Task holds, does not import the context, which holds the Task."""

    @property
    def turns(self) -> list[TurnRecord]: ...


class User(Protocol):
    """A task's simulated user, checked, as an episode plays it (the `users` part's `SimulatedUser`)."""

    @property
    def kind(self) -> Literal["function", "model"]: ...

    @property
    def max_turns(self) -> int: ...

    @property
    def label(self) -> str:
        """The user as an error names it."""

    async def next_message(self, context: Conversation) -> str | None:
        """The user's next message, or None to end the task; EpisodeError USER_FAILED saying why."""


class UserMaker(Protocol):
    """What the `users` part registers as `users.simulated`: the user a task's `user` declares."""

    def __call__(
        self, spec: UserFunction | UserModel, function: Callable[..., Any] | None = None
    ) -> User: ...
