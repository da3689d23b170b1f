"""Episodes: one play of one task, and the Episode API the server plays through.

deploying -> turn k open -> verifying -> scored | failed -> torn down. `end_turn(reply)` opens the
next turn (answering with its prompt) or, after the last one, runs the verifiers and scores.
Teardown runs exactly once, never raises, and releases everything the episode made, even when
it comes while a deploy or a call is still in flight.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from agent_env._threads import call_maybe_async, run_in_own_thread
from agent_env.env import Env, EnvSpec
from agent_env.errors import EpisodeError
from agent_env.sandbox.base import Sandbox, SandboxProvider
from agent_env.sandbox.registry import sandbox_provider
from agent_env.task import Task
from agent_env.tools import Tool
from agent_env.verifiers import VerifierContext, aggregate

log = logging.getLogger("agent_env.episode")

_T = TypeVar("_T")

RELEASE_TIMEOUT_S = 30.0
"""How long a teardown waits for each step of it (a deploy still running, each env's close, the
sandbox) before it gives up on that step, logs it, and goes on: a teardown always ends."""


class EpisodeState(enum.Enum):
    NEW = "new"
    DEPLOYING = "deploying"
    TURN_OPEN = "turn_open"
    VERIFYING = "verifying"
    SCORED = "scored"
    FAILED = "failed"
    TORN_DOWN = "torn_down"


@dataclass(frozen=True)
class TurnEnd:
    """What ending a turn led to: the next turn's prompt, or (`done`) the episode's score."""

    done: bool
    turn: int
    prompt: str | None = None
    score: float | None = None
    verifier_scores: tuple[float, ...] = ()


@runtime_checkable
class EpisodeAPI(Protocol):
    """The one seam between serving and the engine; `agent_env.testing` fakes it."""

    @property
    def tools(self) -> list[dict[str, Any]]: ...

    async def deploy(self) -> str: ...

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str: ...

    async def end_turn(self, reply: str) -> TurnEnd: ...

    async def teardown(self) -> None: ...


class Episode:
    """One play of `task`, with its env instances and, when it needs one, its sandbox."""

    def __init__(self, task: Task, *, sandbox: SandboxProvider | str | None = None) -> None:
        self.task = task
        self.state = EpisodeState.NEW
        self.turn = 0
        self.replies: list[str] = []
        self.score: float | None = None
        self.error: EpisodeError | None = None
        self._provider = sandbox_provider(
            sandbox if sandbox is not None else task.sandbox.provider, task.sandbox
        )
        self._tools: dict[str, tuple[str, Tool]] = {t.name: (e.name, t) for e, t in task.toolset.env_tools}
        self._envs: dict[str, Env] = {}
        self._sandbox: Sandbox | None = None
        self._env_making: asyncio.Future[None] | None = None
        self._sandbox_creation: asyncio.Future[Sandbox] | None = None
        self._calls = asyncio.Lock()
        self._teardown: asyncio.Task[None] | None = None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.task.toolset.tools

    @property
    def sandbox(self) -> Sandbox | None:
        return self._sandbox

    async def deploy(self) -> str:
        """Make the env instances and the sandbox, then open the first turn; returns its prompt."""
        if self.state is not EpisodeState.NEW:
            raise EpisodeError("ALREADY_DEPLOYED", f"episode of task '{self.task.id}' was already deployed")
        self.state = EpisodeState.DEPLOYING
        try:
            for env in self.task.toolset.envs:
                # Shielded and tracked, as the sandbox's creation is: a teardown that comes meanwhile
                # waits for the instance, so it can close it rather than miss it.
                self._env_making = asyncio.ensure_future(self._make_env(env))
                await asyncio.shield(self._env_making)
                self._check_alive()
            if self.task.needs_sandbox:
                self._sandbox_creation = asyncio.ensure_future(self._provider.create(self.task.files))
                self._sandbox = await asyncio.shield(self._sandbox_creation)
                self._check_alive()
        except EpisodeError as exc:
            raise self._failed(exc) from None
        except Exception as exc:
            message = f"deploy of task '{self.task.id}' failed: {type(exc).__name__}: {exc}"
            raise self._failed(EpisodeError("DEPLOY_FAILED", message)) from exc
        self.state = EpisodeState.TURN_OPEN
        self.turn = 1
        return self.task.turns[0]

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run one of the toolset's tools with arguments checked against its schema."""
        async with self._calls:
            self._require_open_turn()
            if name == "bash" and self.task.toolset.bash:
                return await self._bash(arguments)
            found = self._tools.get(name)
            if found is None:
                raise self._unknown_tool(name)
            env_name, tool = found
            return await tool.call(self._envs[env_name], arguments)

    async def end_turn(self, reply: str) -> TurnEnd:
        """End the open turn with the agent's reply: open the next one, or verify and score."""
        async with self._calls:
            self._require_open_turn()
            self.replies.append(reply)
            if self.turn < len(self.task.turns):
                self.turn += 1
                return TurnEnd(done=False, turn=self.turn, prompt=self.task.turns[self.turn - 1])
            self.state = EpisodeState.VERIFYING
            context = VerifierContext(self.task, dict(self._envs), tuple(self.replies), self._sandbox)
            try:
                scores = [await verifier.score(context) for verifier in self.task.verifiers]
            except EpisodeError as exc:
                raise self._failed(exc) from None
            except Exception as exc:
                message = f"a verifier of task '{self.task.id}' failed: {type(exc).__name__}: {exc}"
                raise self._failed(EpisodeError("VERIFIER_FAILED", message)) from exc
            weights = [verifier.spec.weight for verifier in self.task.verifiers]
            self.score = aggregate(list(zip(scores, weights, strict=True)), self.task.aggregate)
            self.state = EpisodeState.SCORED
            return TurnEnd(done=True, turn=self.turn, score=self.score, verifier_scores=tuple(scores))

    def fail(self, error: EpisodeError) -> None:
        """End the episode with an error (a missed deadline, say); teardown is still the caller's."""
        self._failed(error)

    async def teardown(self) -> None:
        """Release every env instance and the sandbox; runs once, however often it is called."""
        if self._teardown is None:
            self._teardown = asyncio.ensure_future(self._release())
        await asyncio.shield(self._teardown)

    async def _release(self) -> None:
        closing_from = self.state
        self.state = EpisodeState.TORN_DOWN
        if self._env_making is not None:
            await self._settled(self._env_making, "making an env instance")
        for name, instance in list(self._envs.items()):
            await self._bounded(_close(instance), f"closing env '{name}'")
        self._envs.clear()
        sandbox = self._sandbox
        if sandbox is None and self._sandbox_creation is not None:
            sandbox = await self._settled(self._sandbox_creation, "making the sandbox")
        if sandbox is not None:
            await self._bounded(sandbox.teardown(), "tearing down the sandbox")
        log.debug("episode of task '%s' torn down (was %s)", self.task.id, closing_from.value)

    async def _bounded(self, step: Awaitable[None], what: str) -> None:
        """Run one step of the teardown; one that raises or outlasts `RELEASE_TIMEOUT_S` is logged."""
        try:
            async with asyncio.timeout(RELEASE_TIMEOUT_S):
                await step
        except TimeoutError:
            self._given_up(what)
        except Exception:
            log.exception("teardown of an episode of task '%s': %s failed", self.task.id, what)

    async def _settled(self, deploying: asyncio.Future[_T], what: str) -> _T | None:
        """What a deploy step still running made, once it ends; None if it failed or outlasts
        `RELEASE_TIMEOUT_S` (logged), since then there is nothing the teardown can release."""
        if not deploying.done():
            await asyncio.wait({deploying}, timeout=RELEASE_TIMEOUT_S)
        if not deploying.done():
            self._given_up(what)
            return None
        if deploying.cancelled() or deploying.exception() is not None:
            return None
        return deploying.result()

    def _given_up(self, what: str) -> None:
        log.error(
            "teardown of an episode of task '%s': %s took over %g s; given up on, it may leak",
            self.task.id,
            what,
            RELEASE_TIMEOUT_S,
        )

    async def _make_env(self, env: EnvSpec) -> None:
        instance = await call_maybe_async(env.cls)
        assert isinstance(instance, Env)
        self._envs[env.name] = instance
        self._check_alive()
        await call_maybe_async(instance.setup, self.task.seed.get(env.name, {}))

    async def _bash(self, arguments: Mapping[str, Any]) -> str:
        command = arguments.get("command") if isinstance(arguments, Mapping) else None
        extra = sorted(set(arguments) - {"command"}) if isinstance(arguments, Mapping) else []
        if not isinstance(command, str) or extra:
            problem = (
                f"unknown argument '{extra[0]}'" if extra else "argument 'command' (a string) is required"
            )
            raise EpisodeError("INVALID_ARGUMENTS", f"bash: {problem}")
        assert self._sandbox is not None
        settings = self.task.sandbox
        result = await self._sandbox.run(
            command, timeout_s=settings.command_timeout_s, max_output_bytes=settings.max_output_bytes
        )
        return result.render(settings.command_timeout_s)

    def _require_open_turn(self) -> None:
        if self.state is not EpisodeState.TURN_OPEN:
            detail = f": {self.error.message}" if self.error else ""
            raise EpisodeError(
                "NO_OPEN_TURN",
                f"no turn is open: the episode of task '{self.task.id}' is {self.state.value}{detail}",
            )

    def _check_alive(self) -> None:
        if self.state is EpisodeState.TORN_DOWN:
            raise EpisodeError(
                "TORN_DOWN", f"the episode of task '{self.task.id}' was torn down during its deploy"
            )

    def _failed(self, error: EpisodeError) -> EpisodeError:
        if self.state is not EpisodeState.TORN_DOWN:
            self.state = EpisodeState.FAILED
        self.error = error
        return error

    def _unknown_tool(self, name: str) -> EpisodeError:
        available = ", ".join(t["function"]["name"] for t in self.tools)
        if any(env.tool(name) for env in self.task.toolset.envs):
            return EpisodeError(
                "TOOL_NOT_ALLOWED",
                f"tool '{name}' is not available to role '{self.task.toolset.role}' in task "
                f"'{self.task.id}' (tools: {available})",
            )
        return EpisodeError("UNKNOWN_TOOL", f"unknown tool '{name}' (tools: {available})")


async def _close(instance: Env) -> None:
    """Close an env instance; a sync close runs on a thread of its own, so one that never returns
    holds no thread of the shared pool."""
    if asyncio.iscoroutinefunction(instance.close):
        await instance.close()
    else:
        await run_in_own_thread(instance.close)
