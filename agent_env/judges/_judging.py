"""Judging: what every judgement of a server (or of a replay, a play) shares: the endpoint and model it
overrides, the cache, a bound on the requests in flight per endpoint, and who is told of each call.

`Judging.verdict(judge, transcript)` is one judgement: kept ones come from the cache (memory, then
disk) and identical ones in flight are asked once; a new one waits for a slot of its endpoint
(`max_concurrency`; judges of one endpoint share the smallest), then has `timeout_s` in all, its
retries included. One that fails, outlasts its deadline or answers no verdict on the scale raises
`JudgeError`, which the verifier makes an unscorable episode. Each judgement asked is told to the
observers (`observe`) as a `JudgeCall`: the server counts them in `/metrics` that way, so the core
needs no metrics library. The `openai` client (the `judge` extra) is imported at the first request.

Serve-time settings override a bundle's: `url` (`--judge-url`, `AGENTENV_JUDGE_URL`) replaces every
judge's endpoint, and its key is then read from `AGENTENV_JUDGE_KEY` alone (a bundle's key never goes
to another endpoint than its own); `model` (`--judge-model`, `AGENTENV_JUDGE_MODEL`) every judge's
model; `cache` (`--judge-cache`, `AGENTENV_JUDGE_CACHE`) is the folder verdicts are kept in.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent_env._contracts.judges import Judge
from agent_env._errors import AgentEnvError, ArgumentError
from agent_env._threads import run_sync
from agent_env.judges._cache import DEFAULT_MEMORY_ENTRIES, VerdictCache
from agent_env.judges._transcript import digest, group_request_body, request_body
from agent_env.judges._verdict import Verdict, VerdictError, read_verdict, read_verdicts

if TYPE_CHECKING:
    import openai

log = logging.getLogger("agent_env.judges")

URL_VARIABLE = "AGENTENV_JUDGE_URL"
MODEL_VARIABLE = "AGENTENV_JUDGE_MODEL"
KEY_VARIABLE = "AGENTENV_JUDGE_KEY"
CACHE_VARIABLE = "AGENTENV_JUDGE_CACHE"

Outcome = Literal["ok", "cached", "failed"]
FAILURES = ("timeout", "unavailable", "refused", "unreadable", "off_scale", "no_endpoint")
"""Why a judgement failed, as `JudgeCall.reason` and `/metrics` name it."""


@dataclass(frozen=True)
class JudgeCall:
    """One judgement, as observers are told of it: kept (`cached`), asked (`ok`) or `failed` (with
    its `reason`, one of `FAILURES`); the seconds and tokens of a request made, when there was one."""

    model: str
    url: str
    outcome: Outcome
    reason: str = ""
    seconds: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


_Reader = Callable[[str | None], list[Verdict]]
"""The verdicts an answer's content holds (one, or a group's), or VerdictError."""

JudgeObserver = Callable[[JudgeCall], None]
"""Told of each judgement on the loop that asked it: it must not block."""


class JudgeError(AgentEnvError):
    """A judgement that gave no verdict: `kind` (one of `FAILURES`) and what happened, in words."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class _OnLoop:
    """What lives on one event loop: the judgements in flight, each endpoint's slots, its clients."""

    running: dict[str, asyncio.Future[list[Verdict]]] = field(default_factory=dict)
    slots: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    clients: dict[tuple[str, str | None], openai.AsyncOpenAI] = field(default_factory=dict)


class Judging:
    """Every judgement of one server (or replay): `url` and `model` override every judge's, `cache` is
    a folder of kept verdicts (none: memory alone, `memory_entries` of them)."""

    def __init__(
        self,
        *,
        url: str | None = None,
        model: str | None = None,
        cache: str | Path | None = None,
        memory_entries: int = DEFAULT_MEMORY_ENTRIES,
    ) -> None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ArgumentError(f"the judge's url must start with http:// or https://, got {url!r}")
        if model is not None and not model.strip():
            raise ArgumentError("the judge's model must not be empty")
        self.url = url.rstrip("/") if url else None
        self.model = model
        self.cache = VerdictCache(cache, max_entries=memory_entries)
        self._observers: list[JudgeObserver] = []
        self._limits: dict[str, int] = {}
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _OnLoop] = (
            weakref.WeakKeyDictionary()
        )

    @classmethod
    def from_environment(
        cls, *, url: str | None = None, model: str | None = None, cache: str | Path | None = None
    ) -> Judging:
        """The arguments given, else `AGENTENV_JUDGE_URL`, `AGENTENV_JUDGE_MODEL`, `AGENTENV_JUDGE_CACHE`."""
        return cls(
            url=url or os.environ.get(URL_VARIABLE) or None,
            model=model or os.environ.get(MODEL_VARIABLE) or None,
            cache=cache or os.environ.get(CACHE_VARIABLE) or None,
        )

    def observe(self, observer: JudgeObserver) -> None:
        """Tell `observer` of every judgement from now on."""
        self._observers.append(observer)

    def resolved(self, judge: Judge) -> Judge:
        """`judge` as this judging asks it: the overriding endpoint (with its own key) and model."""
        if self.url is not None:
            judge = replace(judge, url=self.url, api_key_env=KEY_VARIABLE)
        if self.model is not None:
            judge = replace(judge, model=self.model)
        return judge

    def admit(self, judges: Iterable[Judge]) -> None:
        """Check, before any episode, that each judge has an endpoint and the key it names is set, and
        bound each endpoint by the smallest `max_concurrency` of its judges; ArgumentError if not."""
        for judge in map(self.resolved, judges):
            if judge.url is None:
                raise ArgumentError(_no_url(judge))
            if judge.api_key_env and not os.environ.get(judge.api_key_env) and self.url is None:
                raise ArgumentError(
                    f"{judge.label} reads its endpoint's key from ${judge.api_key_env}, which is not set: "
                    "set it to the key of the endpoint at " + judge.url
                )
            self._limits[judge.url] = min(
                self._limits.get(judge.url, judge.max_concurrency), judge.max_concurrency
            )

    def described(self, judges: Iterable[Judge]) -> list[str]:
        """What a start says of the judges: what each asks, and where verdicts are kept."""
        asked = list(dict.fromkeys(map(self.resolved, judges)))
        limits: dict[str | None, int] = {}
        for judge in asked:
            limits[judge.url] = min(limits.get(judge.url, judge.max_concurrency), judge.max_concurrency)
        lines = [
            f"{judge.label} asks model '{judge.model}' at {judge.url} ({limits[judge.url]} at once at most)"
            for judge in asked
        ]
        if lines:
            kept = f"in {self.cache.folder.resolve()}" if self.cache.folder is not None else "in memory alone"
            lines.append(f"the judges' verdicts are kept {kept}")
        return lines

    async def verdict(self, judge: Judge, transcript: dict[str, Any]) -> Verdict:
        """The judge's verdict on `transcript`; JudgeError, its message naming the judge, if none."""
        judge = self._ready(judge)
        body = request_body(judge, transcript)
        (verdict,) = await self._judged(judge, body, lambda content: [read_verdict(content, judge.scale)])
        return verdict

    async def verdicts(self, judge: Judge, transcripts: Sequence[dict[str, Any]]) -> list[Verdict]:
        """The judge's verdicts on `transcripts` compared with each other, in one request, in their
        order (one transcript alone: `verdict`'s); JudgeError if any is missing."""
        if len(transcripts) == 1:
            return [await self.verdict(judge, transcripts[0])]
        judge = self._ready(judge)
        body = group_request_body(judge, transcripts)
        count = len(transcripts)
        return await self._judged(judge, body, lambda content: read_verdicts(content, judge.scale, count))

    def _ready(self, judge: Judge) -> Judge:
        judge = self.resolved(judge)
        if judge.url is None:
            raise JudgeError("no_endpoint", _no_url(judge))
        return judge

    async def _judged(self, judge: Judge, body: dict[str, Any], read: _Reader) -> list[Verdict]:
        """The verdicts `body` asks for: kept, in flight already, or asked now."""
        assert judge.url is not None
        key = digest(body)
        kept = self.cache.remembered(key)
        if kept is not None:
            self._tell(JudgeCall(judge.model, judge.url, "cached"))
            return kept
        here = self._on_loop()
        running = here.running.get(key)
        if running is not None:  # the same judgement, asked already: its answer is this one's too
            try:
                verdicts = await asyncio.shield(running)
            except JudgeError as exc:
                self._tell(JudgeCall(judge.model, judge.url, "failed", exc.kind))
                raise
            except asyncio.CancelledError:
                if not running.cancelled():
                    raise  # this caller was cancelled, not the one it waited for
            else:
                self._tell(JudgeCall(judge.model, judge.url, "cached"))
                return verdicts
        asked: asyncio.Future[list[Verdict]] = asyncio.get_running_loop().create_future()
        here.running[key] = asked
        try:
            verdicts = await self._asked(judge, body, key, read, here)
        except JudgeError as exc:
            asked.set_exception(exc)
            asked.exception()  # retrieved: none waiting for it is no error
            raise
        except BaseException:
            asked.cancel()
            raise
        else:
            asked.set_result(verdicts)
            return verdicts
        finally:
            if here.running.get(key) is asked:
                del here.running[key]

    async def aclose(self) -> None:
        """Close this loop's clients of the endpoints (a server's shutdown)."""
        here = self._loops.pop(asyncio.get_running_loop(), None)
        for client in here.clients.values() if here is not None else ():
            await client.close()

    async def _asked(
        self, judge: Judge, body: dict[str, Any], key: str, read: _Reader, here: _OnLoop
    ) -> list[Verdict]:
        assert judge.url is not None
        if self.cache.folder is not None:
            kept = await run_sync(self.cache.read, key)
            if kept is not None:
                self.cache.remember(key, kept)
                self._tell(JudgeCall(judge.model, judge.url, "cached"))
                return kept
        from agent_env.judges._client import JudgeEndpointError, ask, new_client

        client_key = (judge.url, os.environ.get(judge.api_key_env) if judge.api_key_env else None)
        client = here.clients.get(client_key)
        if client is None:
            client = here.clients[client_key] = new_client(judge.url, client_key[1], judge.timeout_s)
        slots = here.slots.get(judge.url)
        if slots is None:
            slots = here.slots[judge.url] = asyncio.Semaphore(
                self._limits.setdefault(judge.url, judge.max_concurrency)
            )
        async with slots:
            started = time.monotonic()
            deadline = asyncio.timeout(judge.timeout_s)
            try:
                async with deadline:
                    answer = await ask(client, judge.url, body, judge.retries)
            except TimeoutError:
                if not deadline.expired():
                    raise
                raise self._failed(
                    judge,
                    "timeout",
                    f"gave no verdict within its timeout_s of {judge.timeout_s:g} s (its retries included)",
                    time.monotonic() - started,
                ) from None
            except JudgeEndpointError as exc:
                raise self._failed(judge, exc.kind, str(exc), time.monotonic() - started) from None
        seconds = time.monotonic() - started
        call = JudgeCall(
            judge.model, judge.url, "ok", "", seconds, answer.prompt_tokens, answer.completion_tokens
        )
        try:
            verdicts = read(answer.content)
        except VerdictError as exc:
            self._tell(replace(call, outcome="failed", reason=exc.kind))
            raise JudgeError(exc.kind, f"{_named(judge)} {exc}") from None
        self.cache.remember(key, verdicts)
        if self.cache.folder is not None:
            await run_sync(self.cache.write, key, verdicts)
        self._tell(call)
        return verdicts

    def _failed(self, judge: Judge, kind: str, what: str, seconds: float) -> JudgeError:
        assert judge.url is not None
        self._tell(JudgeCall(judge.model, judge.url, "failed", kind, seconds))
        return JudgeError(kind, f"{_named(judge)}: {what}")

    def _on_loop(self) -> _OnLoop:
        loop = asyncio.get_running_loop()
        here = self._loops.get(loop)
        if here is None:
            here = self._loops[loop] = _OnLoop()
        return here

    def _tell(self, call: JudgeCall) -> None:
        for observer in self._observers:
            try:
                observer(call)
            except Exception:
                log.exception("an observer of the judges raised on %s", call)


def _named(judge: Judge) -> str:
    return f"{judge.label} (model '{judge.model}' at {judge.url})"


def _no_url(judge: Judge) -> str:
    return (
        f"{judge.label} has no endpoint: give it a url (bundle.toml's [judges.NAME] url, or the "
        f"verifier's), or serve with --judge-url URL (or ${URL_VARIABLE})"
    )


_defaults: dict[tuple[str | None, ...], Judging] = {}


def default_judging() -> Judging:
    """The process's judging for episodes given none (`Episode(task)` alone): its settings from the
    environment (`Judging.from_environment`), one per set of them, made at its first use."""
    settings = tuple(os.environ.get(name) or None for name in (URL_VARIABLE, MODEL_VARIABLE, CACHE_VARIABLE))
    judging = _defaults.get(settings)
    if judging is None:
        judging = _defaults[settings] = Judging.from_environment()
    return judging
