"""A chat model plays the user (the `users` extra): the persona is its system prompt, and the
conversation so far is shown to it the other way round.

The user's messages are the model's own turns (`assistant`), the agent's replies what it answers
(`user`); the agent's tool calls are the agent's business and are not shown, as a person talking to
an assistant does not see them. The model ends the task by answering `STOP`. Any OpenAI-compatible
chat-completions endpoint serves, through the `openai` client, with its key from `api_key_env`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from agent_env._errors import AgentEnvError
from agent_env.users._require import require_users_extra

require_users_extra()

import openai  # noqa: E402

from agent_env._contracts.users import STOP, UserModel  # noqa: E402
from agent_env._trajectory import TurnRecord  # noqa: E402
from agent_env.users._endpoint import Settings, endpoint_problem  # noqa: E402

INSTRUCTIONS = (
    "You are playing a user who talks with an AI assistant; stay in character. Write only your next "
    "message to the assistant, as that user would: no quotes, no narration. When your request is done, "
    f"or there is nothing more you want, answer with {STOP} alone."
)


class UserModelError(AgentEnvError):
    """The user's model could not answer: what went wrong, in one line, and what to check."""


def user_messages(spec: UserModel, turns: Sequence[TurnRecord]) -> list[dict[str, str]]:
    """The request's messages: the persona, then the conversation as the user lived it."""
    messages = [{"role": "system", "content": f"{spec.persona}\n\n{INSTRUCTIONS}"}]
    for turn in turns:
        messages.append({"role": "assistant", "content": turn.prompt})
        if turn.reply is not None:
            messages.append({"role": "user", "content": turn.reply})
    return messages


async def ask_user_model(spec: UserModel, turns: Sequence[TurnRecord]) -> str | None:
    """The model's next message as the user, or None when it ends the task."""
    key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    options: dict[str, Any] = {}
    if spec.temperature is not None:
        options["temperature"] = spec.temperature
    if spec.max_tokens is not None:
        options["max_tokens"] = spec.max_tokens
    # The key is never optional to the client; a server that wants none ignores a placeholder.
    async with openai.AsyncOpenAI(
        base_url=spec.model_url, api_key=key or "unused", max_retries=spec.max_retries, timeout=spec.timeout_s
    ) as client:
        try:
            response = await client.chat.completions.create(
                model=spec.model,
                messages=user_messages(spec, turns),  # type: ignore[arg-type]
                **options,
            )
        except openai.APIError as exc:
            raise UserModelError(endpoint_problem(exc, spec.model_url, spec.model, _FIELDS)) from None
    if not response.choices:
        raise UserModelError(f"{spec.model_url} answered with no choices")
    text = (response.choices[0].message.content or "").strip()
    if STOP in text:
        return None
    return text


_FIELDS = Settings(
    url="the user's model_url",
    key="set the variable the user's api_key_env names",
    model="the user's model",
)
"""A task file's names of the endpoint's settings, for what a failure says to fix."""
