"""One episode as a client plays it on a session: the reset in flight, then steps, each answer read by
one rule, which the trainer's rollouts and eval's player share.

An answer ends the episode unscored when it carries an error and either says so (`done`) or leaves no
turn open (`turn` null): the server answers so once the episode is over (it failed, or was torn down),
and every later step would only be refused. Any other error is the call's alone: the turn goes on. An
answer that is `done` without an error scores the episode. A session lost ends it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_env._error_types import AgentEnvError, ErrorCode
from agent_env.client._deadlines import Deadlines
from agent_env.client._loop import Answer
from agent_env.client._session import ServerRefusedError, SessionClient, SessionLostError
from agent_env.client._tools import TASK_OVER
from agent_env.client._wire import AgentEnvAction, AgentEnvObservation


@dataclass(frozen=True)
class Ending:
    """Why an episode ended unscored: the server's error code and message, or `SESSION_LOST` and why."""

    code: str
    message: str

    @property
    def reason(self) -> str:
        if self.code == ErrorCode.SESSION_LOST:
            return f"the episode was lost: {self.message}"
        return f"the episode ended: {self.code}: {self.message}"


class EpisodeLostError(AgentEnvError):
    """The episode's session was lost (or its message failed): `ending` says why, `cause` is what failed."""

    def __init__(self, ending: Ending, cause: Exception) -> None:
        super().__init__(ending.reason)
        self.ending = ending
        self.cause = cause


def ends_episode(answer: AgentEnvObservation) -> bool:
    """Whether the server's answer ended the episode unscored (see the module's docstring)."""
    return answer.error is not None and (answer.done or answer.turn is None)


def next_prompt(answer: AgentEnvObservation) -> str:
    """What `end_turn` answers: the next turn's user message, or that the task is over."""
    if answer.done:
        return TASK_OVER
    return (answer.prompt or [{"content": ""}])[-1].get("content", "")


def why(error: Exception) -> str:
    """A failed message's error in words."""
    if isinstance(error, SessionLostError | ServerRefusedError):
        return str(error)
    return f"{type(error).__name__}: {error}"


@dataclass
class ClientEpisode:
    """One episode on `session`: its reset sent, then one step at a time, each within its deadline."""

    session: SessionClient
    split: str
    index: int
    deadlines: Deadlines
    deploy: Answer[AgentEnvObservation]
    done: bool = False
    reward: float | None = None
    ended: Ending | None = None
    """Why the episode cannot go on or be scored; None while it can."""
    turn: int | None = None
    """The open turn, as the server's last answer gave it."""
    max_turns: int | None = None
    """The most turns the episode may have, as the reset's answer gave it (None from an older server)."""
    judged_in_groups: bool = False
    """Whether a relative judge scores the task beside its GRPO group, as the reset's answer said."""

    @classmethod
    def reset(
        cls, session: SessionClient, split: str, index: int, deadlines: Deadlines, *, label: str | None = None
    ) -> ClientEpisode:
        """Send the reset of the task `split`/`index`; it deploys while the caller goes on."""
        deploy = session.reset(split, index, timeout_s=deadlines.reset_timeout_s, label=label)
        return cls(session, split, index, deadlines, deploy)

    def deployed(self) -> AgentEnvObservation | None:
        """The reset's answer, once it came (any error in it ends the episode); None if the session was
        lost, with `ended` saying why."""
        try:
            answer = self.deploy.result()
        except Exception as lost:
            self.ended = Ending(ErrorCode.SESSION_LOST, f"its reset failed: {why(lost)}")
            return None
        if answer.error is not None:
            self.ended = Ending(answer.error.code, answer.error.message)
        self.turn, self.max_turns = answer.turn, answer.max_turns
        self.judged_in_groups = bool(answer.judged_in_groups)
        return answer

    @property
    def in_last_turn(self) -> bool:
        """Whether the open turn is the last the episode may have: ending it ends the task."""
        return self.turn is not None and self.max_turns is not None and self.turn >= self.max_turns

    def call_tool(self, name: str, arguments: dict[str, object]) -> AgentEnvObservation:
        """Call a tool within its deadline; the answer (an error in it is the call's, unless it `ended`
        the episode)."""
        deadline = self.deadlines.tool(name)
        return self.step(AgentEnvAction.call_tool(name, dict(arguments), timeout_s=deadline), deadline)

    def end_turn(self, reply: str, *, group: tuple[str, int] | None = None) -> AgentEnvObservation:
        """End the open turn with `reply` (the last one runs the verifiers: the reset's deadline);
        `group` (key, size) names the episode's GRPO group, for a relative judge."""
        return self.received(self.send_end_turn(reply, group=group))

    def send_end_turn(
        self, reply: str, *, group: tuple[str, int] | None = None
    ) -> Answer[AgentEnvObservation]:
        """Send the end of the open turn and go on; `received` reads its answer when it is wanted."""
        deadline = self.deadlines.reset_timeout_s
        action = AgentEnvAction.end_turn(reply, timeout_s=deadline, group=group)
        return self.session.step(action, timeout_s=deadline)

    def step(self, action: AgentEnvAction, timeout_s: float) -> AgentEnvObservation:
        """Send one step; its answer, read by `received`."""
        return self.received(self.session.step(action, timeout_s=timeout_s))

    def received(self, sent: Answer[AgentEnvObservation]) -> AgentEnvObservation:
        """A step's answer, read by the one rule. A refused message raises `ServerRefusedError` (the
        episode goes on); a lost one `EpisodeLostError` (it ended)."""
        try:
            answer = sent.result()
        except ServerRefusedError:
            raise
        except Exception as lost:
            self.ended = Ending(ErrorCode.SESSION_LOST, why(lost))
            raise EpisodeLostError(self.ended, lost) from None
        if answer.error is not None:
            if ends_episode(answer):
                self.ended = Ending(answer.error.code, answer.error.message)
        elif answer.done:
            self.done, self.reward = True, answer.reward
        self.turn = answer.turn
        return answer
