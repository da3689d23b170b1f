"""One sample: a task played over the wire by a policy, recorded as the client saw it.

The conversation is carried as TRL carries it: the reset's prompt, then each answer and each tool
call's result (a `tool` message with its `tool_call_id`). A turn's reply is what the model passes to
`end_turn`, whose answer is the next turn's prompt: the one rule of eval and of both TRL trainers.
The model's rollout is over when it answers without a tool call (TRL's tool loop stops there), makes
a call that does not parse (TRL takes it for text; counted as invalid), or reaches `max_tool_calls`
(`DEFAULT_MAX_TOOL_CALLS` unless told): the open turn and every later one end with an empty reply,
as training ends them, and the sample is scored. A policy that fails (past its retries, or raising
anything at all) makes the sample an error, `POLICY_ERROR`, which is never scored; `SESSION_LOST` is
the server's session lost and nothing else.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_env._error_types import AgentEnvError, ErrorCode
from agent_env._specs import TaskSpec, VerifierSummary
from agent_env._trajectory import (
    OutcomeRecord,
    TaskRef,
    ToolCallRecord,
    Trajectory,
    TurnRecord,
    VerifierRecord,
)
from agent_env.client._deadlines import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_RESET_TIMEOUT_S,
    DEFAULT_TOOL_TIMEOUT_S,
    Deadlines,
)
from agent_env.client._episode import ClientEpisode, EpisodeLostError, next_prompt
from agent_env.client._session import ServerRefusedError, SessionClient
from agent_env.client._tools import END_TURN, TASK_OVER, end_turn_tool
from agent_env.client._wire import AgentEnvObservation
from agent_env.eval._policy import AssistantMessage, Message, Policy, PolicyError, ToolCall

NOT_RUN = "not run: the turn had already ended"
DEFAULT_MAX_TOOL_CALLS = 100
"""The tool calls a turn may make unless told otherwise: a model that calls tools forever (an unknown
one, again and again) still ends its turn, and the sample is scored as it stands; as TRL's
`max_tool_calling_iterations` ends a rollout's tool loop. Long agentic tasks may need more."""


@dataclass(frozen=True)
class PlaySettings:
    """How each sample is played; deadlines in seconds, as the server enforces them. A tool call gets
    the deadline its tool declares, if the server lists one, else `tool_timeout_s` (as `AgentEnv`'s
    `tool_timeout`). A turn ends once it made `max_tool_calls` calls (None: no bound)."""

    max_tool_calls: int | None = DEFAULT_MAX_TOOL_CALLS
    reset_timeout_s: float = DEFAULT_RESET_TIMEOUT_S
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S


class _EpisodeOverError(AgentEnvError):
    """The episode cannot go on: `outcome` says how it ended."""

    def __init__(self, outcome: OutcomeRecord) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


def play_sample(
    url: str,
    task: TaskSpec,
    policy: Policy,
    *,
    model: str | None,
    settings: PlaySettings = PlaySettings(),
    token: str | None = None,
) -> Trajectory:
    """Play `task` once on a session of its own; the trajectory, whatever happened."""
    started = time.time()
    trajectory = Trajectory(
        recorded_by="eval",
        model=model,
        task=TaskRef(split=task.split, index=task.index, id=task.id, toolset=task.toolset.name),
        started_at=started,
        outcome=OutcomeRecord(kind="abandoned"),
    )
    session = SessionClient(url, connect_timeout_s=settings.connect_timeout_s, token=token)
    try:
        session.open()
        _Game(session, policy, settings, trajectory, task.verifiers, task.turns).play()
    except _EpisodeOverError as ended:
        trajectory.outcome = ended.outcome
    except Exception as exc:  # the server went away, or refused the session
        trajectory.outcome = OutcomeRecord(kind="failed", code=ErrorCode.SESSION_LOST, reason=str(exc))
    finally:
        session.close()
    trajectory.ended_at = time.time()
    trajectory.timings.total_s = trajectory.ended_at - started
    return trajectory


@dataclass
class _Game:
    session: SessionClient
    policy: Policy
    settings: PlaySettings
    trajectory: Trajectory
    verifiers: Sequence[VerifierSummary]
    """The task's verifiers as the Task API lists them: the scores come with the last answer."""
    fixed_turns: int
    """How many turns the task fixes: the later ones are its simulated user's."""
    episode: ClientEpisode | None = None
    ended_by_call: AgentEnvObservation | None = None
    """The answer of a tool call that ended the episode scored (the task's time limit ran out)."""

    def play(self) -> None:
        deploy_started = time.monotonic()
        task, settings = self.trajectory.task, self.settings
        deadlines = Deadlines(settings.reset_timeout_s, settings.tool_timeout_s)
        self.episode = ClientEpisode.reset(self.session, task.split, task.index, deadlines)
        first = self._answer(self.episode.deployed)
        # A tool call gets the deadline its tool declares, once the reset has listed them.
        listed = tuple(sorted((first.tool_timeouts or {}).items()))
        self.episode.deadlines = Deadlines(settings.reset_timeout_s, settings.tool_timeout_s, listed=listed)
        self.trajectory.timings.deploy_s = time.monotonic() - deploy_started
        messages: list[Message] = list(first.prompt or [])
        system = next((m["content"] for m in messages if m.get("role") == "system"), None)
        self.trajectory.system_prompt = system or None
        tools = [*(first.tools or []), end_turn_tool()]
        prompt = _last_user(messages)
        while True:
            number = len(self.trajectory.turns) + 1
            by = "task" if number <= self.fixed_turns else "simulated user"
            turn = TurnRecord(turn=number, prompt=prompt, prompt_by=by)
            self.trajectory.turns.append(turn)
            ending_call = self._turn(turn, messages, tools)
            if self.ended_by_call is not None:  # the task's time limit ran out during a call: scored
                turn.reply = ""
                self._scored(self.ended_by_call)
                return
            if ending_call is None:  # the model stopped without end_turn: its rollout is over
                self._end_open_turns(turn)
                return
            turn.reply = _reply(ending_call)
            answer = self._answer(functools.partial(self._playing.end_turn, turn.reply))
            prompt = next_prompt(answer)
            messages.append(_tool_message(ending_call, prompt))  # as in training: the next turn's prompt
            if answer.done:
                self._scored(answer)
                return

    def _end_open_turns(self, turn: TurnRecord) -> None:
        """End the open turn and every later one with an empty reply, as training does when a rollout
        ends without `end_turn` (TRL's tool loop stops at an answer without a tool call), then score."""
        while True:
            turn.reply = ""
            answer = self._answer(functools.partial(self._playing.end_turn, ""))
            if answer.done:
                self._scored(answer)
                return
            by = "task" if turn.turn + 1 <= self.fixed_turns else "simulated user"
            turn = TurnRecord(turn=turn.turn + 1, prompt=next_prompt(answer), prompt_by=by)
            self.trajectory.turns.append(turn)

    def _turn(
        self, turn: TurnRecord, messages: list[Message], tools: list[dict[str, Any]]
    ) -> ToolCall | None:
        """Play one turn to its end; the `end_turn` call that ended it (its answer, the next prompt,
        comes once the server has it), or None when the model stopped without one."""
        step = 0
        while True:
            step += 1  # each answer of the model is a step of the turn: its calls were made together
            try:
                answer: AssistantMessage = self.policy(messages, tools)
            except PolicyError as exc:
                raise _EpisodeOverError(
                    OutcomeRecord(kind="error", code=ErrorCode.POLICY_ERROR, reason=str(exc))
                ) from None
            except Exception as exc:  # a policy's own failure is the model side's, never a lost session
                reason = f"the policy raised {type(exc).__name__}: {exc}"
                raise _EpisodeOverError(
                    OutcomeRecord(kind="error", code=ErrorCode.POLICY_ERROR, reason=reason)
                ) from None
            messages.append(answer.as_message())
            if not answer.tool_calls:
                return None
            ended, ending_call = False, None
            for call in answer.tool_calls:
                if ended:
                    messages.append(_tool_message(call, NOT_RUN))
                elif not call.valid:
                    turn.invalid_tool_calls += 1
                    messages.append(_tool_message(call, "error: the call did not parse: it ended the turn"))
                    ended = True
                elif call.name == END_TURN:
                    ended, ending_call = True, call
                else:
                    messages.append(_tool_message(call, self._call(turn, call, step)))
                    limit = self.settings.max_tool_calls
                    ended = self.ended_by_call is not None or (limit is not None and len(turn.calls) >= limit)
            if ended:
                return ending_call

    def _call(self, turn: TurnRecord, call: ToolCall, step: int) -> str:
        """Run one tool call of the turn's `step` on the server; what the model is told."""
        assert call.arguments is not None
        record = ToolCallRecord(tool=call.name, arguments=call.arguments, step=step)
        turn.calls.append(record)
        started = time.monotonic()
        answer = self._answer(functools.partial(self._playing.call_tool, call.name, call.arguments))
        record.seconds = time.monotonic() - started
        if answer.error is not None:
            record.error_code, record.error = answer.error.code, answer.error.message
            return f"error: {answer.error.message}"
        record.result = answer.result or ""
        if answer.done:
            self.ended_by_call = answer
        return record.result

    @property
    def _playing(self) -> ClientEpisode:
        assert self.episode is not None
        return self.episode

    def _answer(self, send: Callable[[], AgentEnvObservation | None]) -> AgentEnvObservation:
        """The server's answer; one that ends the episode unscored (or a lost session) ends it here."""
        try:
            answer = send()
        except (EpisodeLostError, ServerRefusedError) as exc:
            reason = exc.ending.message if isinstance(exc, EpisodeLostError) else str(exc)
            raise _EpisodeOverError(
                OutcomeRecord(kind="failed", code=ErrorCode.SESSION_LOST, reason=reason)
            ) from None
        ended = self._playing.ended
        if ended is not None:
            raise _EpisodeOverError(OutcomeRecord(kind="failed", code=ended.code, reason=ended.message))
        assert answer is not None
        return answer

    def _scored(self, answer: AgentEnvObservation) -> None:
        scores = answer.verifier_scores or []
        self.trajectory.verifiers = [
            VerifierRecord(type=verifier.type, weight=verifier.weight, score=score)
            for verifier, score in zip(self.verifiers, scores, strict=False)
        ]
        self.trajectory.score = answer.reward
        self.trajectory.outcome = OutcomeRecord(kind="scored", reason=TASK_OVER)


def _tool_message(call: ToolCall, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


def _reply(call: ToolCall) -> str:
    """The reply an `end_turn` call gives: its `reply` argument, as text."""
    return str((call.arguments or {}).get("reply", ""))


def _last_user(messages: list[Message]) -> str:
    return next((str(m["content"]) for m in reversed(messages) if m.get("role") == "user"), "")
