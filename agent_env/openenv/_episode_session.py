"""One session: at most one live episode, played call by call through its Episode.

A reset ends the session's previous episode (waiting for its teardown), deploys the task and opens
its first turn. Each call runs within its deadline and only while its client is there; a call that
misses its deadline answers at once, its episode ends with an error, and the tracker tears it down
after the reply. A bad request never ends anything: it gets an error with a code and the fix.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from agent_env._contracts.judges import GroupInvite
from agent_env._episode import Episode, EpisodeState, TurnResult
from agent_env._error_types import AgentEnvError, EpisodeError, ErrorCode, validation_problems
from agent_env._errors import ArgumentError
from agent_env._served import ServedTask
from agent_env._unicode import NOT_UNICODE, invalid_text, valid_text
from agent_env.openenv._calls import InterruptedCallError, run_call
from agent_env.openenv._context import ServerContext, TaskLookupError
from agent_env.openenv._wire import (
    DEADLINE_KEY,
    ENDING_CODES,
    GROUP_KEY,
    MAX_LABEL_LENGTH,
    AgentEnvAction,
    AgentEnvObservation,
    AgentEnvState,
    CallError,
    Phase,
)

Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
_DEADLINE: TypeAdapter[float | None] = TypeAdapter(Seconds | None)

_T = TypeVar("_T")


class _ResetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    split: str
    index: int
    timeout_s: Seconds | None = None
    episode_id: str | None = None
    client: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_LABEL_LENGTH,
        description="A label of the client's, which the episode's trajectory keeps.",
    )
    seed: None = Field(default=None, description="refused: a task's own data seeds its episode")

    @field_validator("seed", mode="before")
    @classmethod
    def _no_seed(cls, seed: Any) -> None:
        if seed is not None:
            raise ArgumentError("seed is not taken: a task's own data seeds its episode; leave it out")


@dataclass(frozen=True)
class _Answered:
    """A step that did not return: the error observation that answers for it."""

    observation: AgentEnvObservation


class _RefusedError(AgentEnvError):
    """A request the session answers with an error and nothing else."""

    code: str


class EpisodeSession:
    """The episode-playing half of `AgentEnvEnvironment`; runs on the server's event loop."""

    def __init__(self, context: ServerContext) -> None:
        self._context = context
        self._episode: Episode | None = None
        self._episode_id: str | None = None
        self._steps = 0

    @property
    def state(self) -> AgentEnvState:
        episode = self._episode
        task = episode.task if episode is not None else None
        return AgentEnvState(
            episode_id=self._episode_id,
            step_count=self._steps,
            task_id=task.id if task else None,
            split=task.split if task else None,
            index=task.index if task else None,
            turn=episode.open_turn if episode is not None else None,
            phase=_phase(episode),
        )

    async def reset(self, arguments: Mapping[str, Any]) -> AgentEnvObservation:
        started = time.monotonic()
        split, index = arguments.get("split"), arguments.get("index")
        call = f"reset {split}/{index}" if split is not None and index is not None else "reset"
        try:
            request = self._reset_request(arguments)
            task = self._task(request.split, request.index)
        except _RefusedError as refused:
            return _error(refused.code, refused.message, call)
        if self._episode is not None:
            ending = self._context.tracker.teardown(self._episode, "the session reset")
            try:
                await run_call(_wait(ending), _left(request.timeout_s, started))
            except InterruptedCallError as interrupted:
                message = (
                    f"{call}: the previous episode's teardown did not finish within the reset's "
                    f"deadline of {request.timeout_s:g} s"
                    if interrupted.code == ErrorCode.DEADLINE_EXCEEDED
                    else f"{call}: the connection closed ({interrupted.code})"
                )
                return _error(interrupted.code, message, call)
            self._episode = None
        if self._context.tracker.closing:
            message = "the server is shutting down: it starts no new episode"
            return _error(ErrorCode.SHUTTING_DOWN, message, call)
        return await self._deploy(task, request, started, call)

    async def step(self, action: AgentEnvAction) -> AgentEnvObservation:
        self._steps += 1
        call = f"call_tool {action.tool}" if action.kind == "call_tool" and action.tool else action.kind
        try:
            timeout_s = self._deadline(action)
            group = _group(action)
            episode = self._playing(action)
        except _RefusedError as refused:
            current = self._observation(self._episode) if self._episode else None
            return _error(refused.code, refused.message, call, observation=current)
        if action.kind == "list_tools":
            return self._observation(episode, tools=episode.tools, tool_timeouts=episode.tool_timeouts)
        if action.kind == "call_tool":
            assert action.tool is not None
            return await self._call_tool(episode, action.tool, action.arguments, timeout_s, call)
        return await self._end_turn(episode, action.reply or "", timeout_s, call, group)

    def end(self) -> asyncio.Future[None] | None:
        """Start tearing down the session's episode, if it has one; the future is done when it is gone."""
        if self._episode is None:
            return None
        return self._context.tracker.teardown(self._episode, "the session closed")

    async def close(self) -> None:
        """End the session's episode, if any, and wait until it is torn down."""
        if (ending := self.end()) is not None:
            await _wait(ending)

    async def _deploy(
        self, task: ServedTask, request: _ResetRequest, started: float, call: str
    ) -> AgentEnvObservation:
        episode = task.new_episode()
        self._context.tracker.begin(episode, client=request.client)
        self._episode, self._episode_id, self._steps = episode, request.episode_id, 0
        left = _left(request.timeout_s, started)
        deployed = await self._run(episode, episode.deploy(), left, call, stated_s=request.timeout_s)
        if isinstance(deployed, _Answered):
            return deployed.observation
        return self._observation(
            episode,
            prompt=episode.task.prompt,
            tools=episode.tools,
            tool_timeouts=episode.tool_timeouts,
            judged_in_groups=episode.task.judged_in_groups,
            tasks_fingerprint=self._context.fingerprint or None,
        )

    async def _call_tool(
        self, episode: Episode, tool: str, arguments: dict[str, Any], timeout_s: float | None, call: str
    ) -> AgentEnvObservation:
        deadline_s, whose = _tool_deadline(episode, tool, timeout_s)
        step = episode.call_tool(tool, arguments)
        result = await self._run(episode, step, deadline_s, call, turn_survives_errors=True, whose=whose)
        if isinstance(result, _Answered):
            return result.observation
        if episode.final is not None:  # the task's time limit ran out: the call ended the episode, scored
            return self._scored(episode, episode.final, result=result)
        return self._observation(episode, result=result)

    async def _end_turn(
        self, episode: Episode, reply: str, timeout_s: float | None, call: str, group: GroupInvite | None
    ) -> AgentEnvObservation:
        end = await self._run(episode, episode.end_turn(reply, group=group), timeout_s, call)
        if isinstance(end, _Answered):
            return end.observation
        if not end.done:
            return self._observation(episode, prompt=[{"role": "user", "content": end.prompt or ""}])
        return self._scored(episode, end)

    def _scored(self, episode: Episode, end: TurnResult, **fields: Any) -> AgentEnvObservation:
        """The answer that ends a scored episode; its teardown starts now and runs after the reply."""
        self._context.tracker.teardown(episode)
        observation = self._observation(episode, verifier_scores=list(end.verifier_scores), **fields)
        observation.done, observation.reward = True, end.score
        return observation

    async def _run(
        self,
        episode: Episode,
        step: Awaitable[_T],
        timeout_s: float | None,
        call: str,
        *,
        turn_survives_errors: bool = False,
        stated_s: float | None = None,
        whose: str | None = None,
    ) -> _T | _Answered:
        """What `step` returns, or the error observation that answers for it.

        A step interrupted, or failing in a way that ends the episode, fails the episode; with
        `turn_survives_errors` (tool calls) any other `EpisodeError` leaves the turn open. `stated_s`
        is the deadline the client gave, when `timeout_s` is only what is left of it; `whose` says
        whose deadline `timeout_s` is, when it may not be the client's (a tool call's).
        """
        try:
            return await run_call(step, timeout_s)
        except InterruptedCallError as interrupted:
            stated = stated_s if stated_s is not None else timeout_s
            return _Answered(self._interrupted(episode, interrupted, stated, call, whose))
        except EpisodeError as exc:
            if turn_survives_errors and exc.code not in ENDING_CODES:
                return _Answered(_error(exc.code, exc.message, call, observation=self._observation(episode)))
            return _Answered(self._failed(episode, exc, call))
        except Exception as exc:
            error = EpisodeError(ErrorCode.INTERNAL_ERROR, f"{call}: {type(exc).__name__}: {exc}")
            return _Answered(self._failed(episode, error, call))

    def _reset_request(self, arguments: Mapping[str, Any]) -> _ResetRequest:
        if (where := invalid_text(dict(arguments))) is not None:
            raise _RefusedError(ErrorCode.BAD_REQUEST, f"reset: field '{where}' {NOT_UNICODE}")
        try:
            return _ResetRequest.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(validation_problems(exc, noun="argument"))
            raise _RefusedError(
                ErrorCode.BAD_REQUEST,
                f"reset: {problems}. Reset takes split (str), index (int), and optionally timeout_s "
                f"(seconds > 0) and episode_id; splits: {self._context.splits_summary()}",
            ) from None

    def _task(self, split: str, index: int) -> ServedTask:
        try:
            return self._context.task(split, index)
        except TaskLookupError as missing:
            raise _RefusedError(missing.code, missing.message) from None

    def _deadline(self, action: AgentEnvAction) -> float | None:
        try:
            return _DEADLINE.validate_python(action.metadata.get(DEADLINE_KEY))
        except ValidationError:
            raise _RefusedError(
                ErrorCode.BAD_REQUEST,
                f"metadata.{DEADLINE_KEY} must be a number of seconds > 0, "
                f"got {action.metadata.get(DEADLINE_KEY)!r}",
            ) from None

    def _playing(self, action: AgentEnvAction) -> Episode:
        """The episode a step plays on, after checking the step's fields fit its kind."""
        if action.kind == "call_tool" and not action.tool:
            raise _RefusedError(ErrorCode.BAD_REQUEST, "call_tool needs the name of a tool in `tool`")
        stray = [
            name
            for name, given in (
                ("tool", action.tool),
                ("arguments", action.arguments),
                ("reply", action.reply),
            )
            if given and name not in _FIELDS[action.kind]
        ]
        if stray:
            raise _RefusedError(ErrorCode.BAD_REQUEST, f"{action.kind} does not take {', '.join(stray)}")
        for name, given in (("tool", action.tool), ("reply", action.reply)):
            if given is not None and invalid_text(given) is not None:
                raise _RefusedError(ErrorCode.BAD_REQUEST, f"{action.kind}: field '{name}' {NOT_UNICODE}")
        episode = self._episode
        if episode is None:
            raise _RefusedError(ErrorCode.NO_EPISODE, "no episode: reset(split=..., index=...) first")
        if action.kind != "list_tools":
            try:
                episode.require_open_turn()
            except EpisodeError as closed:
                raise _RefusedError(closed.code, f"{closed.message}; reset to play another") from None
        return episode

    def _interrupted(
        self,
        episode: Episode,
        interrupted: InterruptedCallError,
        timeout_s: float | None,
        call: str,
        whose: str | None = None,
    ) -> AgentEnvObservation:
        task = episode.task.id
        if interrupted.code == ErrorCode.DEADLINE_EXCEEDED:
            which = f" ({whose})" if whose else ""
            message = (
                f"{call} missed its deadline of {timeout_s:g} s{which}: the episode of task '{task}' "
                "ended and is torn down"
            )
        elif interrupted.code == ErrorCode.SHUTTING_DOWN:
            message = f"{call}: the server is shutting down: the episode of task '{task}' ended"
        else:
            message = f"{call}: the client disconnected: the episode of task '{task}' ended"
        return self._failed(episode, EpisodeError(interrupted.code, message), call)

    def _failed(self, episode: Episode, error: EpisodeError, call: str) -> AgentEnvObservation:
        """End the episode with an error; its teardown starts now and runs after the reply."""
        episode.fail(error)
        self._context.tracker.teardown(episode)
        observation = _error(error.code, error.message, call, observation=self._observation(episode))
        observation.done = True
        return observation

    def _observation(self, episode: Episode, **fields: Any) -> AgentEnvObservation:
        task = episode.task
        return AgentEnvObservation(
            task_id=task.id,
            split=task.split,
            index=task.index,
            turn=episode.open_turn,
            turns=len(task.turns),
            max_turns=task.max_turns,
            **fields,
        )


_FIELDS: dict[str, frozenset[str]] = {
    "call_tool": frozenset({"tool", "arguments"}),
    "end_turn": frozenset({"reply"}),
    "list_tools": frozenset(),
}


def _error(
    code: str, message: str, call: str, *, observation: AgentEnvObservation | None = None
) -> AgentEnvObservation:
    answer = observation or AgentEnvObservation()
    # The call names what the client sent (a split, a tool), which may not be valid Unicode.
    answer.error = CallError(code=code, message=valid_text(message), call=valid_text(call))
    return answer


_PHASES: dict[EpisodeState, Phase] = {
    EpisodeState.NEW: "deploying",
    EpisodeState.DEPLOYING: "deploying",
    EpisodeState.TURN_OPEN: "turn_open",
    EpisodeState.VERIFYING: "verifying",
}


def _phase(episode: Episode | None) -> Phase:
    """Where the session's episode is, as the wire's state says it."""
    if episode is None:
        return "idle"
    return _PHASES.get(episode.state, "ended")


def _tool_deadline(episode: Episode, tool: str, client_s: float | None) -> tuple[float | None, str]:
    """The deadline a tool call runs under, the smaller of the client's and the tool's own, and whose
    it is, as the error of a call past it says (so its reader knows which one to raise: at a tie the
    tool's, since a client that lists deadlines sends the tool's own)."""
    own_s = episode.tool_timeout(tool)
    if own_s is None:
        return client_s, "the client's"
    if client_s is not None and client_s < own_s:
        return client_s, f"the client's; the tool's own is {own_s:g} s"
    source = episode.tool_timeout_source(tool)
    smaller = f"; the client's was {client_s:g} s" if client_s is not None else ""
    return own_s, source + smaller


def _group(action: AgentEnvAction) -> GroupInvite | None:
    """The GRPO group an end_turn names in its metadata, checked; None if it names none."""
    given = action.metadata.get(GROUP_KEY)
    if given is None:
        return None
    if action.kind != "end_turn":
        raise _RefusedError(ErrorCode.BAD_REQUEST, f"only end_turn takes metadata.{GROUP_KEY}")
    shape = f'metadata.{GROUP_KEY} is {{"key": TEXT, "size": N}} and nothing else'
    if not isinstance(given, dict) or set(given) != {"key", "size"}:
        raise _RefusedError(ErrorCode.BAD_REQUEST, f"{shape}; got {valid_text(repr(given))[:200]}")
    key, size = given["key"], given["size"]
    if not isinstance(key, str) or invalid_text(key) is not None or type(size) is not int:
        raise _RefusedError(ErrorCode.BAD_REQUEST, f"{shape}: its key text, its size an integer")
    try:
        return GroupInvite(key, size)
    except ArgumentError as exc:
        raise _RefusedError(ErrorCode.BAD_REQUEST, f"metadata.{GROUP_KEY}: {exc}") from None


def _left(timeout_s: float | None, started: float) -> float | None:
    return None if timeout_s is None else max(0.0, timeout_s - (time.monotonic() - started))


async def _wait(teardown: asyncio.Future[None]) -> None:
    """Wait for a tracked teardown without cancelling it when the waiter is cancelled."""
    await asyncio.shield(teardown)
