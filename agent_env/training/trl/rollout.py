"""One environment instance's episodes: reset at once, then tools, turns and the reward in order.

TRL resets every rollout of a batch, one after the other, before generating; so `reset` only sends
the reset and returns, and the first tool call or `get_reward` waits for the deploy. Calls on one
instance are serialized by a lock (AsyncGRPO calls from a thread pool). An episode that cannot be
scored (it failed on the server, missed a deadline, lost its session, is not the task its row
names, or its server's fingerprint is not the run's) gives no reward: `None`, which TRL turns into NaN.
A single server whose fingerprint changed is no such episode: its rewards would all be another
bundle's, so its tool calls and reward raise `FleetMismatchError`, which stops the run.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_env.client.deadlines import Deadlines
from agent_env.client.loop import Answer
from agent_env.client.session import ServerRefusedError, SessionClient, SessionLostError
from agent_env.client.tools import TASK_OVER
from agent_env.client.wire import AgentEnvAction, AgentEnvObservation
from agent_env.training.trl.errors import FleetMismatchError, ToolCallError
from agent_env.training.trl.fleet import Fleet


@dataclass
class _Episode:
    split: str
    index: int
    prompt: list[dict[str, Any]] | None
    url: str
    deploy: Answer[AgentEnvObservation]
    deployed: bool = False
    done: bool = False
    reward: float | None = None
    ended: str | None = None
    """Why the episode cannot go on or be scored; None while it can."""
    stops_run: bool = False
    """Its single server serves other tasks or bundle content than the run (`ended` says which): every
    call on it raises, for no reward there is the run's."""


class Rollouts:
    """The episodes one environment instance plays, one at a time, on one session it keeps open: on
    the fleet's server with the most room when it opens, and again on another after the session
    was lost or its server stopped answering."""

    def __init__(self, fleet: Fleet, deadlines: Deadlines, *, label: str | None = None) -> None:
        self._fleet = fleet
        self._label = label
        self._deadlines = deadlines
        self._lock = threading.RLock()
        self._session: SessionClient | None = None
        self._episode: _Episode | None = None
        self._closed = False

    def reset(self, row: Mapping[str, Any]) -> None:
        """Send the reset for the row's task; the episode deploys while TRL goes on."""
        split, index, prompt = _task_of(row)
        with self._lock:
            if self._closed:
                raise RuntimeError(
                    "this environment was closed (by AgentEnv.close() or at exit): make a new AgentEnv"
                )
            if self._episode is not None:
                _settle(self._episode.deploy)
            self._episode = None
            session = self._open_session()
            deploy = session.reset(split, index, timeout_s=self._deadlines.reset_timeout, label=self._label)
            self._episode = _Episode(split, index, prompt, session.url, deploy)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        with self._lock:
            episode = self._playing(f"call {name}")
            deadline = self._deadlines.tool(name)
            action = AgentEnvAction.call_tool(name, arguments, timeout_s=deadline)
            answer = self._step(episode, action, deadline)
            return answer.result or ""

    def end_turn(self, reply: str) -> str:
        """End the open turn; the answer is the next turn's request, or that the task is over."""
        with self._lock:
            episode = self._playing("end the turn")
            answer = self._end_turn(episode, reply)
            if episode.done:
                return TASK_OVER
            return (answer.prompt or [{"content": ""}])[-1].get("content", "")

    def reward(self) -> float | None:
        """End the turns left open with an empty reply, then the score; None if it cannot be scored."""
        with self._lock:
            episode = self._episode
            if episode is None:
                return None
            self._deployed(episode)
            while episode.ended is None and not episode.done:
                try:
                    self._end_turn(episode, "")
                except ToolCallError:
                    break
            return None if episode.ended is not None else episode.reward

    def detach(self) -> SessionClient | None:
        """Refuse later resets, and hand over the session to close (the server then tears down its
        episode); it is not locked, so a call in flight on another thread ends with the session."""
        self._closed = True
        session, self._session = self._session, None
        return session

    def _open_session(self) -> SessionClient:
        held = self._session
        if held is not None and (held.lost or not self._fleet.usable(held.url)):
            held.close()
            self._session = held = None
        if held is None:
            held = self._session = self._fleet.open_session()
        return held

    def _playing(self, what: str) -> _Episode:
        episode = self._episode
        if episode is None:
            raise ToolCallError(f"cannot {what}: no episode was reset")
        self._deployed(episode)
        if episode.ended is not None:
            raise ToolCallError(f"cannot {what}: {episode.ended}")
        if episode.done:
            raise ToolCallError(f"cannot {what}: the task is over (its last turn ended)")
        return episode

    def _deployed(self, episode: _Episode) -> None:
        """Wait for the episode's reset, once, and check it deployed the row's task on a server that
        still serves the run's tasks and bundle content."""
        if not episode.deployed:
            episode.deployed = True
            self._check_deploy(episode)
        if episode.stops_run:
            raise FleetMismatchError(str(episode.ended))

    def _check_deploy(self, episode: _Episode) -> None:
        try:
            answer = episode.deploy.result()
        except Exception as failed:
            episode.ended = f"the episode was lost: its reset failed: {_why(failed)}"
            self._report(failed)
            return
        try:
            changed = self._fleet.changed(episode.url, answer.tasks_fingerprint)
        except FleetMismatchError as mismatch:
            episode.ended, episode.stops_run = str(mismatch), True
            return
        if changed is not None:
            episode.ended = f"the episode cannot be scored: {changed}"
        elif answer.error is not None:
            episode.ended = f"the episode ended: {answer.error.code}: {answer.error.message}"
        elif (answer.split, answer.index) != (episode.split, episode.index) or (
            episode.prompt is not None and _messages(answer.prompt) != _messages(episode.prompt)
        ):
            episode.ended = (
                f"the server's task {answer.split}/{answer.index} ('{answer.task_id}') is not the row's "
                f"({episode.split}/{episode.index}, with its prompt): the dataset is stale; rebuild it"
            )

    def _end_turn(self, episode: _Episode, reply: str) -> AgentEnvObservation:
        deadline = self._deadlines.reset_timeout
        answer = self._step(episode, AgentEnvAction.end_turn(reply, timeout_s=deadline), deadline)
        if answer.done:
            episode.done, episode.reward = True, answer.reward
        return answer

    def _step(self, episode: _Episode, action: AgentEnvAction, timeout_s: float) -> AgentEnvObservation:
        session = self._session
        if session is None:
            episode.ended = "the episode was lost: its environment was closed"
            raise ToolCallError(episode.ended)
        try:
            answer = session.step(action, timeout_s=timeout_s).result()
        except ServerRefusedError as refused:
            raise ToolCallError(f"the server refused the call: {refused.code}: {refused.message}") from None
        except Exception as lost:
            episode.ended = f"the episode was lost: {_why(lost)}"
            self._report(lost)
            raise ToolCallError(episode.ended) from None
        if answer.error is not None:
            if answer.done:
                episode.ended = f"the episode ended: {answer.error.code}: {answer.error.message}"
            raise ToolCallError(answer.error.message)
        return answer

    def _report(self, error: Exception) -> None:
        """Tell the fleet of a session lost, so that no other session is placed on its server until
        it answers again."""
        session = self._session
        if isinstance(error, SessionLostError) and session is not None:
            self._fleet.lost(session.url, str(error))


def _task_of(row: Mapping[str, Any]) -> tuple[str, int, list[dict[str, Any]] | None]:
    split, index = row.get("split"), row.get("index")
    if not isinstance(split, str) or isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(
            f"reset() needs the row's split (str) and index (int), got split={split!r}, index={index!r}: "
            "train on AgentEnv.dataset (or dataset_for(split)), whose rows carry both"
        )
    prompt = row.get("prompt")
    return split, index, list(prompt) if isinstance(prompt, list) else None


def _messages(prompt: Any) -> list[tuple[Any, Any]]:
    return [(m.get("role"), m.get("content")) for m in prompt or []]


def _why(error: Exception) -> str:
    if isinstance(error, SessionLostError | ServerRefusedError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _settle(future: Answer[Any]) -> None:
    """Wait for a message still in flight, whatever its outcome, so the next one does not overtake it."""
    try:
        future.result()
    except Exception:
        return
