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

import contextlib
import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_env._errors import ArgumentTypeError, StateError
from agent_env.client._deadlines import Deadlines
from agent_env.client._episode import ClientEpisode, EpisodeLostError, next_prompt
from agent_env.client._loop import Answer
from agent_env.client._session import ServerRefusedError, SessionClient, SessionLostError
from agent_env.client._tools import TASK_OVER
from agent_env.client._wire import AgentEnvObservation
from agent_env.training.trl._curriculum import asked_by, draw, report
from agent_env.training.trl._errors import FleetMismatchError, ToolCallError
from agent_env.training.trl._fleet import Fleet


@dataclass
class _Episode:
    """The client's episode, with what the trainer checks of it: the row's prompt, and its server."""

    played: ClientEpisode
    prompt: list[dict[str, Any]] | None
    url: str
    deployed: bool = False
    refused: str | None = None
    """Why the trainer will not score it though the server might (its server serves other tasks, it is
    not the row's task, its environment was closed); None while it would."""
    held: str | None = None
    """The last turn's reply, kept unsent when a relative judge scores the task: sent by the reward,
    with the episode's GRPO group when `score_batch` knows it (`agent_env.judges._groups`)."""
    ending: Answer[AgentEnvObservation] | None = None
    """The last turn's end, sent and not yet read: its answer (the verifiers' score) is waited for by
    the reward, so that scoring runs while the trainer goes on."""
    curriculum: tuple[str, str, str] | None = None
    """The run, split and group key of a task the online curriculum drew; its score goes back to it."""
    reported: bool = False
    stops_run: bool = False
    """Its single server serves other tasks or bundle content than the run (`refused` says which): every
    call on it raises, for no reward there is the run's."""

    @property
    def ended(self) -> str | None:
        """Why the episode cannot go on or be scored; None while it can."""
        if self.refused is not None:
            return self.refused
        return None if self.played.ended is None else self.played.ended.reason


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

    def reset(self, row: Mapping[str, Any]) -> str | None:
        """Send the reset for the row's task; the episode deploys while TRL goes on. A curriculum row's
        task is drawn first, and its first message returned: TRL appends it to the row's prompt."""
        asked = asked_by(row)
        drawn: tuple[str, str, str] | None = None
        opening: str | None = None
        if asked is None:
            split, index, prompt = _task_of(row)
        else:
            group, task = draw(self._fleet.settings, asked)
            split, index, prompt = asked.split, task.index, list(task.prompt)
            drawn, opening = (asked.run, asked.split, group), task.prompt[-1]["content"]
        with self._lock:
            if self._closed:
                raise StateError(
                    "this environment was closed (by AgentEnv.close() or at exit): make a new AgentEnv"
                )
            if self._episode is not None:
                _settle(self._episode.played.deploy)
                if self._episode.ending is not None:
                    _settle(self._episode.ending)
            self._episode = None
            session = self._open_session()
            played = ClientEpisode.reset(session, split, index, self._deadlines, label=self._label)
            self._episode = _Episode(played, prompt, session.url, curriculum=drawn)
        return opening

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        with self._lock:
            episode = self._playing(f"call {name}")
            answer = self._step(episode, lambda: episode.played.call_tool(name, arguments))
            return answer.result or ""

    def end_turn(self, reply: str) -> str:
        """End the open turn; the answer is the next turn's request, or that the task is over.

        The end of the episode's last turn is sent and not waited for: the task is over whatever the
        verifiers say, and they run on the server while the trainer goes on (TRL runs a batch's tool
        calls one rollout after another); the reward waits for their score."""
        with self._lock:
            episode = self._playing("end the turn")
            if episode.played.in_last_turn and self._session is not None:
                if episode.played.judged_in_groups:
                    episode.held = reply
                else:
                    episode.ending = episode.played.send_end_turn(reply)
                return TASK_OVER
            return next_prompt(self._step(episode, lambda: episode.played.end_turn(reply)))

    def grouping(self) -> tuple[str, str, int] | None:
        """Where the episode waits to be judged beside its GRPO group: its server, split and index;
        None when it does not (no relative judge, or it ended)."""
        with self._lock:
            episode = self._episode
            if episode is None or episode.ending is not None or episode.played.done:
                return None
            self._deployed(episode)
            if episode.ended is not None or not episode.played.judged_in_groups:
                return None
            return episode.url, episode.played.split, episode.played.index

    def reward(self, group: tuple[str, int] | None = None) -> float | None:
        """End the turns left open (the last with its held reply, else an empty one), naming `group`,
        the episode's GRPO group (key, size), if known; then the score, None if it cannot be scored.
        Asked again, the same score at once."""
        with self._lock:
            episode = self._episode
            if episode is None:
                return None
            self._deployed(episode)
            ending, episode.ending = episode.ending, None
            if ending is not None and episode.ended is None:
                with contextlib.suppress(ToolCallError):  # scored below with an empty reply
                    self._step(episode, lambda: episode.played.received(ending))
            while episode.ended is None and not episode.played.done:
                reply, episode.held = episode.held or "", None
                try:
                    self._step(episode, functools.partial(episode.played.end_turn, reply, group=group))
                except ToolCallError:
                    break
            reward = None if episode.ended is not None else episode.played.reward
            if reward is not None and episode.curriculum is not None and not episode.reported:
                episode.reported = True
                report(self._fleet.settings, *episode.curriculum, reward)
            return reward

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
        if episode.played.done or episode.ending is not None or episode.held is not None:
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
        played = episode.played
        answer = played.deployed()
        if answer is None:
            self._report_lost(played)
            return
        try:
            changed = self._fleet.changed(episode.url, answer.tasks_fingerprint)
        except FleetMismatchError as mismatch:
            episode.refused, episode.stops_run = str(mismatch), True
            return
        if changed is not None:
            episode.refused = f"the episode cannot be scored: {changed}"
        elif played.ended is None and (
            (answer.split, answer.index) != (played.split, played.index)
            or (episode.prompt is not None and _messages(answer.prompt) != _messages(episode.prompt))
        ):
            episode.refused = (
                f"the server's task {answer.split}/{answer.index} ('{answer.task_id}') is not the row's "
                f"({played.split}/{played.index}, with its prompt): the dataset is stale; rebuild it"
            )

    def _step(self, episode: _Episode, send: Callable[[], AgentEnvObservation]) -> AgentEnvObservation:
        """Send one step of the episode; a ToolCallError (the model is shown it) for any error."""
        if self._session is None:
            episode.refused = "the episode was lost: its environment was closed"
            raise ToolCallError(episode.refused)
        try:
            answer = send()
        except ServerRefusedError as refused:
            raise ToolCallError(f"the server refused the call: {refused.code}: {refused.message}") from None
        except EpisodeLostError as lost:
            self._report(lost.cause)
            raise ToolCallError(str(lost)) from None
        if answer.error is not None:
            raise ToolCallError(answer.error.message)
        return answer

    def _report_lost(self, played: ClientEpisode) -> None:
        """Tell the fleet of the session its reset was lost with."""
        try:
            played.deploy.result()
        except Exception as failed:
            self._report(failed)

    def _report(self, error: Exception) -> None:
        """Tell the fleet of a session lost, so that no other session is placed on its server until
        it answers again."""
        session = self._session
        if isinstance(error, SessionLostError) and session is not None:
            self._fleet.lost(session.url, str(error))


def _task_of(row: Mapping[str, Any]) -> tuple[str, int, list[dict[str, Any]] | None]:
    split, index = row.get("split"), row.get("index")
    if not isinstance(split, str) or isinstance(index, bool) or not isinstance(index, int):
        raise ArgumentTypeError(
            f"reset() needs the row's split (str) and index (int), got split={split!r}, index={index!r}: "
            "train on AgentEnv.dataset (or dataset_for(split)), whose rows carry both"
        )
    prompt = row.get("prompt")
    return split, index, list(prompt) if isinstance(prompt, list) else None


def _messages(prompt: Any) -> list[tuple[Any, Any]]:
    return [(m.get("role"), m.get("content")) for m in prompt or []]


def _settle(future: Answer[Any]) -> None:
    """Wait for a message still in flight, whatever its outcome, so the next one does not overtake it."""
    try:
        future.result()
    except Exception:
        return
