"""A task's `user` as its file declares it (pydantic alone): a function of the bundle's `users.py`, or a chat
model playing a persona, with the turns and the time each answer may take.

Below both users: spec.py (SimulatedUser, which plays them) and _chat.py (the chat model's user) read
these, and _chat.py is imported by spec.py only when a model answers.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

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
