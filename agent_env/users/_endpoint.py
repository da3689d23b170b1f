"""An OpenAI-compatible endpoint's failures in words: what went wrong, and the setting that fixes it.

Both clients of such an endpoint use it: `agent-env eval`'s policy (its settings are command-line
flags) and a chat model playing a simulated user (its settings are the task's `user` fields).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_env.users._require import require_users_extra

require_users_extra()

import openai  # noqa: E402


@dataclass(frozen=True)
class Settings:
    """How the endpoint's user names each setting the fix is in."""

    url: str
    key: str
    model: str


def endpoint_problem(exc: openai.APIError, base_url: str, model: str, settings: Settings) -> str:
    """What a failed request says: the endpoint, what happened, and which setting to check."""
    if isinstance(exc, openai.APIConnectionError):
        return f"no model server answers at {base_url} ({exc}): start one, or check {settings.url}"
    if isinstance(exc, openai.AuthenticationError):
        return f"{base_url} refused the API key (401): {settings.key}"
    if isinstance(exc, openai.NotFoundError):
        return f"{base_url} does not know model '{model}' (404): check {settings.model}"
    if isinstance(exc, openai.APIStatusError):
        return f"{base_url} answered {exc.status_code}: {_detail(exc)}"
    return f"{type(exc).__name__}: {exc}"


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])[:300]
    return str(exc.message)[:300]


def late_answer(base_url: str, seconds: float) -> str:
    """What a request past its deadline says (its retries and its body included)."""
    return f"the endpoint at {base_url} sent no complete answer within {seconds:g} s"


def unreadable_answer(base_url: str, what: str, body: bytes) -> str:
    """What an answer that is no chat completion says: the endpoint, what is wrong, its first bytes."""
    excerpt = body[:EXCERPT_BYTES].decode("utf-8", "replace")
    more = " ..." if len(body) > EXCERPT_BYTES else ""
    return f"the endpoint at {base_url} sent {what}: {excerpt!r}{more}"


EXCERPT_BYTES = 120
"""How much of an unreadable answer its error quotes."""
