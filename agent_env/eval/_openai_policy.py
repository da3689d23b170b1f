"""The policy of any OpenAI-compatible chat-completions endpoint, checked before the first episode.

`check()` asks for the model list (or, where there is none, a one-token reply) so that an endpoint
that does not answer, refuses the key or does not serve the model is one clear error up front. A
request that fails mid-run is retried `max_retries` times by the client's own backoff, then it is a
`PolicyError`.

Each request has `request_timeout_s` in all, its retries and its body included. A read timeout only
bounds the wait for the next bytes, so a body that trickles in would never end: the client runs on
one event loop thread of its own, where the deadline cancels the request wherever it is. The body is
read here, up to `max_answer_bytes`, and parsed here: an answer past its deadline, too large, not
JSON or not a chat completion is a `PolicyError` naming the endpoint and what it sent, as a 500 past
the retries is. The sample is then an error, never a score.

The client's connections are closed by `close()` (or by leaving a `with` block), on that loop. A
policy dropped unclosed is still safe: its HTTP client is one with no finalizer. The SDK's default
one, collected on a loop thread, schedules its own close there, after the collector has already
closed its sockets; by then a new connection may hold a socket's number, and that late close takes
the new connection's reader off the loop, so that request waits, silent, until its deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent_env._errors import AgentEnvError, ArgumentError, StateError
from agent_env.eval._require import require_eval_extra

require_eval_extra()

import openai  # noqa: E402
import pydantic  # noqa: E402
from openai.types.chat import ChatCompletionMessage  # noqa: E402

from agent_env._error_types import validation_problems  # noqa: E402
from agent_env.client._loop import ClientLoop  # noqa: E402
from agent_env.eval._policy import AssistantMessage, Message, PolicyError, ToolCall  # noqa: E402
from agent_env.users._endpoint import (  # noqa: E402
    Settings,
    endpoint_problem,
    late_answer,
    unreadable_answer,
)

DEFAULT_MAX_RETRIES = 3
DEFAULT_REQUEST_TIMEOUT_S = 300.0
MAX_ANSWER_BYTES = 4 * 1024 * 1024
"""A chat completion's body past this is refused unread: an answer of 512 tokens is a few KiB."""
CHECK_TIMEOUT_S = 15.0
CLOSE_TIMEOUT_S = 10.0
_GRACE_S = 5.0
"""How long past its deadline a caller waits for a cancelled request to say so."""

_LOOP = ClientLoop("agent-env-eval-endpoint")
_T = TypeVar("_T")


class EndpointError(AgentEnvError):
    """The endpoint cannot play: what is wrong, in one line, and what to do."""


class _UnreadableError(AgentEnvError):
    """The endpoint answered 200 with something that is not a chat completion: what it sent."""


class OpenAIPolicy:
    """Chat completions of `model` at `base_url`, with the tools as the request's `tools`."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        if max_retries < 0:
            raise ArgumentError(f"max_retries must be >= 0, got {max_retries}")
        if request_timeout_s <= 0 or max_answer_bytes <= 0:
            raise ArgumentError(
                f"request_timeout_s and max_answer_bytes must be > 0, got {request_timeout_s} and "
                f"{max_answer_bytes}"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.request_timeout_s = request_timeout_s
        self.max_answer_bytes = max_answer_bytes
        # The key is never optional to the client; a server that wants none ignores a placeholder.
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key or "unused",
            max_retries=max_retries,
            timeout=request_timeout_s,
            http_client=openai.DefaultAsyncHttpxClient(),
        )

    @classmethod
    def from_env(
        cls, base_url: str, model: str, *, api_key_env: str | None = None, **options: Any
    ) -> OpenAIPolicy:
        """The key from the variable `api_key_env` (unset or empty: none)."""
        key = os.environ.get(api_key_env) if api_key_env else None
        return cls(base_url, model, api_key=key or None, **options)

    def close(self) -> None:
        """Close the endpoint's connections; asked again, the policy raises StateError."""
        if not self._client.is_closed():
            _LOOP.submit(self._client.close()).result(timeout_s=CLOSE_TIMEOUT_S)

    def _open_client(self) -> openai.AsyncOpenAI:
        if self._client.is_closed():
            raise StateError(f"this OpenAIPolicy of {self.base_url} was closed: make a new one to play again")
        return self._client

    def __enter__(self) -> OpenAIPolicy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def check(self) -> None:
        """Raise EndpointError unless the endpoint answers, takes the key and serves the model."""
        quick = self._open_client().with_options(max_retries=0, timeout=CHECK_TIMEOUT_S)
        try:
            served = _within(CHECK_TIMEOUT_S, _listed(quick))
        except openai.NotFoundError:
            served = None  # no model list here: a one-token request says the same
        except openai.APIError as exc:
            raise EndpointError(self._problem(exc)) from None
        except TimeoutError:
            raise EndpointError(self._late(CHECK_TIMEOUT_S, "check --model-url")) from None
        if served is not None:
            if self.model not in served:
                listed = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
                raise EndpointError(
                    f"{self.base_url} does not serve model '{self.model}' (it serves: {listed or 'none'}): "
                    "pass one of those as --model"
                )
            return
        request = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
        try:
            _within(CHECK_TIMEOUT_S, self._complete(quick, request))
        except openai.APIError as exc:
            raise EndpointError(self._problem(exc)) from None
        except TimeoutError:
            raise EndpointError(self._late(CHECK_TIMEOUT_S, "check --model-url")) from None
        except _UnreadableError as exc:
            raise EndpointError(f"{exc}: check --model-url") from None

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> AssistantMessage:
        request: dict[str, Any] = {"messages": messages, "tools": tools}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        try:
            message = _within(self.request_timeout_s, self._complete(self._open_client(), request))
        except openai.APIError as exc:
            raise PolicyError(
                f"the request failed after {self.max_retries} retries: {self._problem(exc)}"
            ) from None
        except TimeoutError:
            hint = "raise --request-timeout if the model needs longer"
            raise PolicyError(self._late(self.request_timeout_s, hint)) from None
        except _UnreadableError as exc:
            raise PolicyError(str(exc)) from None
        calls = tuple(
            ToolCall.parsed(call.id, call.function.name, call.function.arguments or "")
            if call.type == "function"
            else ToolCall(call.id, "", "")
            for call in message.tool_calls or []
        )
        return AssistantMessage(message.content or "", calls)

    async def _complete(self, client: openai.AsyncOpenAI, request: dict[str, Any]) -> ChatCompletionMessage:
        """The first choice's message of one chat completion, its body read and parsed here."""
        async with client.chat.completions.with_streaming_response.create(
            model=self.model, **request
        ) as sent:
            body = bytearray()
            try:
                async for chunk in sent.iter_bytes():
                    body += chunk
                    if len(body) > self.max_answer_bytes:
                        raise _UnreadableError(
                            f"the endpoint at {self.base_url} sent more than {_size(self.max_answer_bytes)} "
                            "for one answer (a chat completion is far smaller)"
                        )
            except _UnreadableError:
                raise
            except Exception as exc:  # the HTTP library's own errors: which library is the client's choice
                raise _UnreadableError(
                    f"the endpoint at {self.base_url} broke off its answer ({type(exc).__name__}: {exc})"
                ) from None
        return self._message(bytes(body))

    def _message(self, body: bytes) -> ChatCompletionMessage:
        try:
            data = json.loads(body)
        except ValueError:
            raise _UnreadableError(
                unreadable_answer(self.base_url, "something that is not JSON", body)
            ) from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            what = "JSON that is not a chat completion (no choices)"
            raise _UnreadableError(unreadable_answer(self.base_url, what, body))
        try:
            return ChatCompletionMessage.model_validate(choices[0].get("message"))
        except pydantic.ValidationError as exc:
            problem = validation_problems(exc, noun="field")[0]
            what = f"JSON that is not a chat completion (its first choice's message: {problem})"
            raise _UnreadableError(unreadable_answer(self.base_url, what, body)) from None

    def _late(self, seconds: float, hint: str) -> str:
        return f"{late_answer(self.base_url, seconds)}: {hint}"

    def _problem(self, exc: openai.APIError) -> str:
        return endpoint_problem(exc, self.base_url, self.model, _FLAGS)


async def _listed(client: openai.AsyncOpenAI) -> list[str]:
    return [model.id async for model in client.models.list()]


def _within(seconds: float, work: Coroutine[Any, Any, _T]) -> _T:
    """`work`'s result, run on the endpoint's loop; TimeoutError once `seconds` have passed."""
    return _LOOP.submit(_bounded(seconds, work)).result(timeout_s=seconds + _GRACE_S)


async def _bounded(seconds: float, work: Coroutine[Any, Any, _T]) -> _T:
    async with asyncio.timeout(seconds):
        return await work


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n} bytes"


_FLAGS = Settings(url="--model-url", key="pass the right one with --api-key-env VAR", model="--model")
"""The command line's names of the endpoint's settings, for what a failure says to fix."""
