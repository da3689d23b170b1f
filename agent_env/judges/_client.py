"""One judgement's request to an OpenAI-compatible endpoint (the `judge` extra: the `openai` client),
retried on what passes (no answer, 408, 429, a 5xx), its answer's body read and parsed here.

The client's own retries are off: these are counted and spaced here (`BACKOFF_S`, doubling), within
the judgement's deadline, which its caller holds (`agent_env.judges._judging`). The body is read up
to `MAX_ANSWER_BYTES` and parsed as a chat completion here, so a 200 that is not one says what it
sent. The content it holds is the verdict's to read (`agent_env.judges._verdict`), not this module's.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from agent_env._errors import AgentEnvError
from agent_env.judges._require import require_judge_extra

require_judge_extra()

import openai  # noqa: E402

from agent_env.users._endpoint import Settings, endpoint_problem, unreadable_answer  # noqa: E402

MAX_ANSWER_BYTES = 1024 * 1024
"""A verdict's chat completion past this is refused: a reason and a score are a few hundred bytes."""
BACKOFF_S = 0.25
"""The wait before the first retry; each next one waits twice as long, up to `MAX_BACKOFF_S`."""
MAX_BACKOFF_S = 4.0
TRANSIENT_STATUSES = frozenset({408, 429})
"""Besides every 5xx: the statuses that say to ask again."""


@dataclass(frozen=True)
class Answer:
    """What the endpoint answered: the first choice's text, and the tokens it counted, if it did."""

    content: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class JudgeEndpointError(AgentEnvError):
    """The endpoint gave no answer: `kind` is "unavailable" (what passes, still there after the
    retries), "refused" (an answer that asking again will not change: 400, 401, 404) or "unreadable"
    (a 200 that is not a chat completion)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def new_client(url: str, key: str | None, timeout_s: float) -> openai.AsyncOpenAI:
    """A client of the endpoint at `url`, without retries of its own; an HTTP client with no finalizer,
    so one dropped unclosed closes nothing on a loop that has moved on (see eval's openai_policy)."""
    return openai.AsyncOpenAI(
        base_url=url,
        api_key=key or "unused",  # never optional to the client; a server that wants none ignores it
        max_retries=0,
        timeout=timeout_s,
        http_client=openai.DefaultAsyncHttpxClient(),
    )


async def ask(client: openai.AsyncOpenAI, url: str, body: dict[str, Any], retries: int) -> Answer:
    """The endpoint's answer to `body`, asked again up to `retries` times; JudgeEndpointError if none."""
    for attempt in range(retries + 1):
        try:
            return await _once(client, url, body)
        except openai.APIError as exc:
            transient = _transient(exc)
            if transient and attempt < retries:
                await asyncio.sleep(min(BACKOFF_S * 2**attempt, MAX_BACKOFF_S))
                continue
            problem = endpoint_problem(exc, url, str(body.get("model")), FIELDS)
            if transient:
                tries = f" (asked {attempt + 1} time{'s' if attempt else ''}; retries: {retries})"
                raise JudgeEndpointError("unavailable", problem + tries) from None
            raise JudgeEndpointError("refused", problem) from None
    raise AssertionError("unreachable: the last attempt returns or raises")


def _transient(exc: openai.APIError) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # no answer, or none in time (APITimeoutError)
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in TRANSIENT_STATUSES
    return False


async def _once(client: openai.AsyncOpenAI, url: str, body: dict[str, Any]) -> Answer:
    async with client.chat.completions.with_streaming_response.create(**body) as sent:
        read = bytearray()
        try:
            async for chunk in sent.iter_bytes():
                read += chunk
                if len(read) > MAX_ANSWER_BYTES:
                    raise JudgeEndpointError(
                        "unreadable",
                        f"the endpoint at {url} sent over {MAX_ANSWER_BYTES // 1024} KiB for one verdict",
                    )
        except JudgeEndpointError:
            raise
        except Exception as exc:  # the HTTP library's own errors: which library is the client's choice
            raise JudgeEndpointError(
                "unavailable", f"the endpoint at {url} broke off its answer ({type(exc).__name__}: {exc})"
            ) from None
    return _answer(url, bytes(read))


def _answer(url: str, body: bytes) -> Answer:
    try:
        data = json.loads(body)
    except ValueError:
        raise JudgeEndpointError(
            "unreadable", unreadable_answer(url, "something that is not JSON", body)
        ) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    message = (
        choices[0].get("message")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict)
        else None
    )
    if not isinstance(message, dict):
        what = "JSON that is not a chat completion (no choice with a message)"
        raise JudgeEndpointError("unreadable", unreadable_answer(url, what, body))
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise JudgeEndpointError(
            "unreadable", unreadable_answer(url, "a message whose content is not text", body)
        )
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return Answer(content, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


FIELDS = Settings(
    url="the judge's url (in bundle.toml's [judges.NAME] or the verifier), or serve with --judge-url",
    key="set the variable the judge's api_key_env names (AGENTENV_JUDGE_KEY with --judge-url)",
    model="the judge's model, or serve with --judge-model",
)
"""Where a judge's endpoint settings are, for what a failure says to fix."""
