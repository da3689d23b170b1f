"""The policy of any OpenAI-compatible chat-completions endpoint, checked before the first episode.

`check()` asks for the model list (or, where there is none, a one-token reply) so that an endpoint
that does not answer, refuses the key or does not serve the model is one clear error up front. A
request that fails mid-run is retried `max_retries` times by the client's own backoff, then it is a
`PolicyError`.
"""

from __future__ import annotations

import os
from typing import Any

from agent_env.eval._require import require_eval_extra

require_eval_extra()

import openai  # noqa: E402

from agent_env.eval.policy import AssistantMessage, Message, PolicyError, ToolCall  # noqa: E402
from agent_env.users.endpoint import Settings, endpoint_problem  # noqa: E402

DEFAULT_MAX_RETRIES = 3
DEFAULT_TIMEOUT_S = 120.0


class EndpointError(Exception):
    """The endpoint cannot play: what is wrong, in one line, and what to do."""


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
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        # The key is never optional to the client; a server that wants none ignores a placeholder.
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "unused",
            max_retries=max_retries,
            timeout=timeout_s,
        )

    @classmethod
    def from_env(
        cls, base_url: str, model: str, *, api_key_env: str | None = None, **options: Any
    ) -> OpenAIPolicy:
        """The key from the variable `api_key_env` (unset or empty: none)."""
        key = os.environ.get(api_key_env) if api_key_env else None
        return cls(base_url, model, api_key=key or None, **options)

    def check(self) -> None:
        """Raise EndpointError unless the endpoint answers, takes the key and serves the model."""
        quick = self._client.with_options(max_retries=0, timeout=15.0)
        try:
            served = [m.id for m in quick.models.list()]
        except openai.NotFoundError:
            served = None  # no model list here: a one-token request says the same
        except openai.APIError as exc:
            raise EndpointError(self._problem(exc)) from None
        if served is not None:
            if self.model not in served:
                listed = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
                raise EndpointError(
                    f"{self.base_url} does not serve model '{self.model}' (it serves: {listed or 'none'}): "
                    "pass one of those as --model"
                )
            return
        try:
            quick.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": "hi"}], max_tokens=1
            )
        except openai.APIError as exc:
            raise EndpointError(self._problem(exc)) from None

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> AssistantMessage:
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,  # type: ignore[arg-type]
                **options,
            )
        except openai.APIError as exc:
            raise PolicyError(
                f"the request failed after {self.max_retries} retries: {self._problem(exc)}"
            ) from None
        if not response.choices:
            raise PolicyError(f"{self.base_url} answered with no choices")
        message = response.choices[0].message
        calls = tuple(
            ToolCall.parsed(call.id, call.function.name, call.function.arguments or "")
            if call.type == "function"
            else ToolCall(call.id, "", "")
            for call in message.tool_calls or []
        )
        return AssistantMessage(message.content or "", calls)

    def _problem(self, exc: openai.APIError) -> str:
        return endpoint_problem(exc, self.base_url, self.model, _FLAGS)


_FLAGS = Settings(url="--model-url", key="pass the right one with --api-key-env VAR", model="--model")
"""The command line's names of the endpoint's settings, for what a failure says to fix."""
