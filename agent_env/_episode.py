"""Episodes: one play of one task, and the one owner of its lifecycle.

new -> deploying -> turn k open -> verifying -> scored | failed -> tearing down -> torn down.
The deploy makes the Python envs' instances, then the sandbox, then starts the MCP envs' servers
(which may work in its folder) and takes the tools they list into the episode's `toolset`.
`end_turn(reply)` opens the next turn (answering with its prompt: the task's next fixed turn, or its
simulated user's message) or, after the last one, runs the verifiers and scores. An error that ends
episodes (`ENDING_CODES`: an MCP server gone) ends this one wherever it is raised. The episode holds
its state, its open turn and its outcome, and emits an event
for each thing that happens (`agent_env._events`): whoever plays it (the server's session, the CLI)
reads those instead of keeping its own. Teardown runs exactly once, never raises, and releases
everything the episode made, even when it comes while a deploy or a call is still in flight.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agent_env._contexts import UserContext, VerifierContext
from agent_env._contracts.judges import GroupInvite, Judgements, Seat
from agent_env._contracts.mcp import McpEnvDefinition
from agent_env._contracts.registry import group_seat, sandbox_provider, start_server
from agent_env._contracts.sandbox import OnHost, Sandbox, SandboxProvider
from agent_env._env import Env, EnvDefinition
from agent_env._error_types import ENDING_CODES, EpisodeError, ErrorCode
from agent_env._errors import ArgumentError
from agent_env._events import (
    Deployed,
    EpisodeEvent,
    EpisodeOutcome,
    Failed,
    Listener,
    Scored,
    ToolAnswered,
    ToolCalled,
    TornDown,
    TurnEnded,
)
from agent_env._task import Task
from agent_env._threads import call_maybe_async, run_in_own_thread
from agent_env._toolset import Shell, Toolset
from agent_env._unicode import NOT_UNICODE, invalid_text, valid_data, valid_text
from agent_env._verifiers import EnvInstance, Judgement, Verifier, aggregate, verifier_place

if TYPE_CHECKING:
    from agent_env._contracts.mcp import ServerEnv

log = logging.getLogger("agent_env._episode")

_T = TypeVar("_T")
_C = TypeVar("_C", bound=VerifierContext)

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
    TEARING_DOWN = "tearing_down"
    TORN_DOWN = "torn_down"

    @property
    def ended(self) -> bool:
        """Whether the episode can no longer be played (it may still be tearing down)."""
        return self in _ENDED


_ENDED = frozenset(
    {EpisodeState.SCORED, EpisodeState.FAILED, EpisodeState.TEARING_DOWN, EpisodeState.TORN_DOWN}
)
_RELEASING = frozenset({EpisodeState.TEARING_DOWN, EpisodeState.TORN_DOWN})


@dataclass(frozen=True)
class TurnResult:
    """What ending a turn led to: the next turn's prompt, or (`done`) the episode's score."""

    done: bool
    turn: int
    prompt: str | None = None
    score: float | None = None
    verifier_scores: tuple[float, ...] = ()
    verifier_details: tuple[str, ...] = ()
    """What each verifier said beside its score, in the task's order ("" for one that said nothing):
    a test script's output tail, say; empty when none said anything."""


class Episode:
    """One play of `task`, with its env instances and, when it needs one, its sandbox.

    `provider` (a name or a `SandboxProvider`) overrides the task's sandbox provider; `listeners`
    (and `observe`) get each event as it is emitted; `events` keeps them all, in order. `judging` is
    what its `judge` verifiers ask through (a server's, with its endpoint, cache and bounds); None:
    the process's own, its settings from the environment (`agent_env.judges._judging`).
    """

    def __init__(
        self,
        task: Task,
        *,
        provider: SandboxProvider | str | None = None,
        listeners: Iterable[Listener] = (),
        judging: Judgements | None = None,
    ) -> None:
        self.task = task
        self.judging = judging
        self.state = EpisodeState.NEW
        self.turn = 0
        """The turn open now or last open, from 1; 0 before the deploy."""
        self.replies: list[str] = []
        self.events: list[EpisodeEvent] = []
        self.outcome: EpisodeOutcome | None = None
        self.started_at: float | None = None
        """When the deploy began, in seconds since the epoch."""
        self._listeners = list(listeners)
        self._provider = sandbox_provider(
            provider if provider is not None else task.sandbox_settings.provider, task.sandbox_settings
        )
        if task.sandbox_settings.workdir is not None and self._provider.name != "docker":
            raise ArgumentError(
                f"task '{task.id}' runs in its own Docker image: play it with the docker sandbox, not "
                f"'{self._provider.name}' (leave --sandbox out)"
            )
        self.toolset: Toolset = task.toolset
        """The task's toolset; once deployed, with the tools its MCP envs' servers listed."""
        self._tool_timeouts = task.toolset.tool_timeouts(task.sandbox_settings.command_timeout_s)
        self._envs: dict[str, EnvInstance] = {}
        self._sandbox: Sandbox | None = None
        self._env_making: asyncio.Future[None] | None = None
        self._sandbox_creation: asyncio.Future[Sandbox] | None = None
        self._calls = asyncio.Lock()
        self._teardown: asyncio.Task[None] | None = None
        self._time_up_at: float | None = None
        self.final: TurnResult | None = None
        """The result of the turn that ended the episode scored (its last, or the one its time limit
        cut short); None until then."""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The JSON Schemas of the tools the played agent sees (an MCP env's once deployed)."""
        return self.toolset.tools

    @property
    def tool_timeouts(self) -> dict[str, float]:
        """Each tool's own deadline in seconds, for the tools that declare one (`Task.tool_timeouts`)."""
        return dict(self._tool_timeouts)

    def tool_timeout(self, name: str) -> float | None:
        """The tool's own deadline in seconds, if it declares one."""
        return self._tool_timeouts.get(name)

    def tool_timeout_source(self, name: str) -> str:
        """Where a tool's own deadline comes from, and how to give it longer: what an error of a call
        cut off at it says."""
        return self.toolset.timeout_source(name)

    @property
    def sandbox(self) -> Sandbox | None:
        return self._sandbox

    @property
    def open_turn(self) -> int | None:
        """The turn open now, from 1; None when none is (deploying, verifying, ended)."""
        return self.turn if self.state is EpisodeState.TURN_OPEN else None

    @property
    def score(self) -> float | None:
        """The verifiers' score, once scored."""
        return self.outcome.score if self.outcome is not None else None

    @property
    def error(self) -> EpisodeError | None:
        """What ended the episode, when it failed."""
        outcome = self.outcome
        if outcome is None or outcome.kind != "failed" or outcome.code is None:
            return None
        return EpisodeError(outcome.code, outcome.reason)

    def observe(self, listener: Listener) -> None:
        """Call `listener` with every event from now on."""
        self._listeners.append(listener)

    async def deploy(self) -> str:
        """Make the env instances and the sandbox, then open the first turn; returns its prompt."""
        if self.state is not EpisodeState.NEW:
            raise EpisodeError(
                ErrorCode.ALREADY_DEPLOYED, f"episode of task '{self.task.id}' was already deployed"
            )
        self.state = EpisodeState.DEPLOYING
        self.started_at, started = time.time(), time.monotonic()
        envs = self.task.toolset.envs
        try:
            for env in envs:
                if isinstance(env, EnvDefinition):
                    await self._making(self._make_env(env))
            if self.task.needs_sandbox:
                self._sandbox_creation = asyncio.ensure_future(self._provider.create(self.task.files))
                self._sandbox = await asyncio.shield(self._sandbox_creation)
                self._check_alive()
            # MCP servers start last: a stdio one works in the sandbox's folder.
            servers = [env for env in envs if isinstance(env, McpEnvDefinition)]
            for server in servers:
                await self._making(self._start_server(server))
            if servers:
                self._list_tools(servers)
        except EpisodeError as exc:
            raise self._failed(exc) from None
        except Exception as exc:
            message = f"deploy of task '{self.task.id}' failed: {type(exc).__name__}: {exc}"
            raise self._failed(EpisodeError(ErrorCode.DEPLOY_FAILED, message)) from exc
        self.state = EpisodeState.TURN_OPEN
        self.turn = 1
        if self.task.time_limit_s is not None:
            self._time_up_at = time.monotonic() + self.task.time_limit_s
        self._emit(Deployed(prompt=self.task.prompt, tools=self.tools, seconds=time.monotonic() - started))
        return self.task.turns[0]

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run one of the toolset's tools with arguments checked against its schema (and held to valid
        Unicode, before any tool runs); its result with any lone surrogate replaced by U+FFFD."""
        async with self._calls:
            self.require_open_turn()
            if self.time_left == 0:
                await self._verify("")
                return self._time_up_note()
            turn, started = self.turn, time.monotonic()
            plain, not_unicode = _plain(arguments), invalid_text(arguments)
            if not_unicode is not None:
                plain = valid_data(plain)
            self._emit(ToolCalled(turn=turn, tool=name, arguments=plain))
            try:
                if not_unicode is not None:
                    message = f"{name}: argument '{not_unicode}' {NOT_UNICODE}"
                    raise EpisodeError(ErrorCode.INVALID_ARGUMENTS, message)
                answer = await self.toolset.call(
                    name, arguments, envs=self._envs, shell=self._shell(), task_id=self.task.id
                )
                result = valid_text(answer)
            except EpisodeError as refused:
                seconds = time.monotonic() - started
                self._emit(
                    ToolAnswered(
                        turn=turn, tool=name, error_code=refused.code, error=refused.message, seconds=seconds
                    )
                )
                if refused.code in ENDING_CODES:  # an MCP env's server gone, or past its call deadline
                    raise self._failed(refused) from None
                raise
            self._emit(ToolAnswered(turn=turn, tool=name, result=result, seconds=time.monotonic() - started))
            if self.time_left == 0:
                await self._verify("")
                return f"{result}\n{self._time_up_note()}"
            return result

    @property
    def time_left(self) -> float | None:
        """Seconds left of the task's time limit (0 once it ran out); None without one, or before the
        deploy."""
        if self._time_up_at is None:
            return None
        return max(0.0, self._time_up_at - time.monotonic())

    def _shell(self) -> Shell | None:
        """What bash runs in: the sandbox, a command cut off at the task's time limit when that comes
        before its own deadline."""
        if self._sandbox is None:
            return None
        settings, left = self.task.sandbox_settings, self.time_left
        if left is not None and left < settings.command_timeout_s:
            settings = settings.model_copy(update={"command_timeout_s": max(left, 0.001)})
        return Shell(self._sandbox, settings)

    def _time_up_note(self) -> str:
        return f"[the task's time limit of {self.task.time_limit_s:g} s ran out: the episode is over]"

    async def end_turn(self, reply: str, *, group: GroupInvite | None = None) -> TurnResult:
        """End the open turn with the agent's reply: open the next one, or verify and score. `group` is
        the episode's GRPO group, which a relative judge scores it beside (`agent_env.judges._groups`);
        it matters only at the end that verifies."""
        async with self._calls:
            self.require_open_turn()
            self.replies.append(reply)
            if self.time_left == 0:
                return await self._verify(reply, group)
            prompt = await self._next_prompt()
            if prompt is not None:
                ended, self.turn = self.turn, self.turn + 1
                self._emit(TurnEnded(turn=ended, reply=reply, prompt=prompt))
                return TurnResult(done=False, turn=self.turn, prompt=prompt)
            return await self._verify(reply, group)

    async def _verify(self, reply: str, group: GroupInvite | None = None) -> TurnResult:
        """End the episode's last turn (or the one its time limit cut short) with `reply`, then score."""
        if len(self.replies) < self.turn:
            self.replies.append(reply)
        self._emit(TurnEnded(turn=self.turn, reply=reply))
        self.state = EpisodeState.VERIFYING
        seat = self._seat(group)
        try:
            await self._seal()
            context = replace(self._context(VerifierContext), group_seat=seat)
            judged = [
                await self._score(index, verifier, context)
                for index, verifier in enumerate(self.task.verifiers)
            ]
        finally:
            if seat is not None:
                seat.leave()  # failed before its judge: its group no longer waits for it
        scores = tuple(judgement.score for judgement in judged)
        weights = [verifier.spec.weight for verifier in self.task.verifiers]
        score = aggregate(list(zip(scores, weights, strict=True)), self.task.aggregate)
        if self.state is EpisodeState.VERIFYING:
            self.state = EpisodeState.SCORED
        self._ended(EpisodeOutcome("scored", score=score))
        components = tuple(judgement.components for judgement in judged)
        details = tuple(judgement.detail for judgement in judged)
        details = details if any(details) else ()
        self._emit(
            Scored(
                score=score,
                verifier_scores=scores,
                components=components if any(components) else (),
                details=details,
            )
        )
        self.final = TurnResult(
            done=True, turn=self.turn, score=score, verifier_scores=scores, verifier_details=details
        )
        return self.final

    def _seat(self, group: GroupInvite | None) -> Seat | None:
        """The episode's seat in its group, when it has one and a relative judge to be judged by."""
        if group is None or not self.task.judged_in_groups:
            return None
        return group_seat(self.judging, group, (self.task.split, self.task.index))

    async def _seal(self) -> None:
        """Seal the sandbox for the verifiers that may run commands in it (`Sandbox.seal`): nothing the
        agent started runs on, and the system's files it changed leave the episode unscorable."""
        if self._sandbox is None or not any(verifier.runs_commands for verifier in self.task.verifiers):
            return
        try:
            await self._sandbox.seal()
        except EpisodeError as exc:
            raise self._failed(exc) from None
        except Exception as exc:
            message = f"task '{self.task.id}': its sandbox could not be sealed for its verifiers: {exc}"
            raise self._failed(EpisodeError(ErrorCode.VERIFIER_FAILED, message)) from exc

    async def _score(self, index: int, verifier: Verifier, context: VerifierContext) -> Judgement:
        """One verifier's score; one that raises fails the episode, named where its author finds it,
        its traceback in the log."""
        try:
            return await verifier.judge(context)
        except EpisodeError as exc:
            raise self._failed(exc) from None
        except Exception as exc:
            where = verifier.where_it_raised(exc)
            place = verifier_place(index)
            log.error("%s of task '%s', %s, raised", place, self.task.id, where, exc_info=exc)
            message = f"{place} of task '{self.task.id}', {where}, failed: {type(exc).__name__}: {exc}"
            raise self._failed(EpisodeError(ErrorCode.VERIFIER_FAILED, message)) from exc

    async def _next_prompt(self) -> str | None:
        """The next turn's message: the task's next fixed turn, else its simulated user's (within
        `max_turns`); None when the task is over."""
        if self.turn < len(self.task.turns):
            return self.task.turns[self.turn]
        user = self.task.user
        if user is None or self.turn >= user.max_turns:
            return None
        try:
            message = await user.next_message(self._context(UserContext))
        except EpisodeError as exc:
            raise self._failed(exc) from None
        return valid_text(message) if message is not None else None

    def _context(self, kind: type[_C]) -> _C:
        """What a verifier or a simulated user sees of the episode now."""
        return kind(
            self.task, dict(self._envs), tuple(self.replies), self._sandbox, tuple(self.events), self.judging
        )

    def fail(self, error: EpisodeError) -> EpisodeError:
        """End the episode with `error` (a missed deadline, a client gone); teardown is still the
        caller's. An episode that already ended keeps its outcome."""
        return self._failed(error)

    def abandon(self, reason: str) -> None:
        """Give the episode up unfinished (its session reset or closed, the server shut down);
        teardown is still the caller's. An episode that already ended keeps its outcome."""
        self._ended(EpisodeOutcome("abandoned", reason=reason))

    async def teardown(self) -> None:
        """Release every env instance and the sandbox; runs once, however often it is called."""
        if self._teardown is None:
            self._teardown = asyncio.ensure_future(self._release())
        await asyncio.shield(self._teardown)

    def require_open_turn(self) -> None:
        """Raise NO_OPEN_TURN, saying where the episode is, unless a turn is open."""
        if self.state is EpisodeState.TURN_OPEN:
            return
        where = f"ended ({self.outcome})" if self.outcome is not None else f"is {self.state.value}"
        raise EpisodeError(
            ErrorCode.NO_OPEN_TURN, f"no turn is open: the episode of task '{self.task.id}' {where}"
        )

    async def _release(self) -> None:
        closing_from, started = self.state, time.monotonic()
        self.state = EpisodeState.TEARING_DOWN
        self._ended(EpisodeOutcome("abandoned"))
        if self._env_making is not None:
            await self._settled(self._env_making, "making an env instance")
        for name, instance in list(self._envs.items()):
            if type(instance).close is not Env.close:  # Env's own close has nothing to release
                await self._bounded(_close(instance), f"closing env '{name}'")
        self._envs.clear()
        sandbox = self._sandbox
        if sandbox is None and self._sandbox_creation is not None:
            sandbox = await self._settled(self._sandbox_creation, "making the sandbox")
        if sandbox is not None:
            await self._bounded(sandbox.teardown(), "tearing down the sandbox")
        self.state = EpisodeState.TORN_DOWN
        self._emit(TornDown(outcome=str(self.outcome), seconds=time.monotonic() - started))
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

    async def _making(self, making: Awaitable[None]) -> None:
        """Make one env, shielded and tracked as the sandbox's creation is: a teardown that comes
        meanwhile waits for the instance, so it can close it rather than miss it."""
        self._env_making = asyncio.ensure_future(making)
        await asyncio.shield(self._env_making)
        self._check_alive()

    async def _start_server(self, env: McpEnvDefinition) -> None:
        """Start (stdio) or reach (HTTP) the server, in the sandbox's folder when it is on this host; the
        SDK (the `mcp` extra) is imported only here, at a deploy that has an MCP env."""
        folder = self._sandbox.root if isinstance(self._sandbox, OnHost) else None
        self._envs[env.name] = await start_server(env, folder=folder, seed=self.task.seed.get(env.name))

    def _list_tools(self, servers: list[McpEnvDefinition]) -> None:
        """Take the tools the MCP envs' servers listed into the episode's toolset."""
        listed = {env.name: cast("ServerEnv", self._envs[env.name]).tools for env in servers}
        try:
            self.toolset = self.task.toolset.with_tools(listed)
        except ValueError as exc:
            raise EpisodeError(
                ErrorCode.DEPLOY_FAILED, f"task '{self.task.id}' cannot offer its MCP envs' tools: {exc}"
            ) from None
        self._tool_timeouts = self.toolset.tool_timeouts(self.task.sandbox_settings.command_timeout_s)

    async def _make_env(self, env: EnvDefinition) -> None:
        # A class with no __init__ of its own cannot block in making one: no thread for that.
        instance = env.cls() if env.cls.__init__ is object.__init__ else await call_maybe_async(env.cls)
        assert isinstance(instance, Env)
        self._envs[env.name] = instance
        self._check_alive()
        await call_maybe_async(instance.setup, env.seed_for(self.task.seed.get(env.name, {})))

    def _check_alive(self) -> None:
        if self.state in _RELEASING:
            raise EpisodeError(
                ErrorCode.TORN_DOWN, f"the episode of task '{self.task.id}' was torn down during its deploy"
            )

    def _failed(self, error: EpisodeError) -> EpisodeError:
        if not self.state.ended:
            self.state = EpisodeState.FAILED
        if self._ended(EpisodeOutcome("failed", code=error.code, reason=error.message)):
            self._emit(Failed(code=error.code, message=error.message))
        return error

    def _ended(self, outcome: EpisodeOutcome) -> bool:
        """Record how the episode ended, unless it already has; whether this ending counts."""
        if self.outcome is not None:
            return False
        self.outcome = outcome
        return True

    def _emit(self, event: EpisodeEvent) -> None:
        self.events.append(event)
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                log.exception("a listener of an episode of task '%s' raised on %s", self.task.id, event.kind)


def _plain(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    """The arguments as the event keeps them: a copy, so a caller's later change cannot rewrite it."""
    return dict(arguments) if isinstance(arguments, Mapping) else {}


async def _close(instance: EnvInstance) -> None:
    """Close an env instance; a sync close runs on a thread of its own, so one that never returns
    holds no thread of the shared pool."""
    if asyncio.iscoroutinefunction(instance.close):
        await instance.close()
    else:
        await run_in_own_thread(instance.close)
