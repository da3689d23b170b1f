"""A relative judge's groups: the rollouts of one GRPO group, judged together in one request.

GRPO learns only from the differences within a group, so a judge that reads a group's rollouts side
by side can score what sets them apart better than one that reads each alone (ART's RULER). The
client names an episode's group when it ends the episode's last turn (`GroupInvite`: a key of its
own, the same for the group's rollouts, and how many of them this server holds); the episode takes a
seat in its group (`seat`) before its verifiers run, and its relative judge hands the seat
its transcript. When every seat is filled or given up (an episode whose verifiers failed before its
judge), the judge is asked once. The transcripts go in the order of their digests, not of arrival, so
the same group makes the same request (kept by the cache) and no rollout's place in it depends on
its speed; each rollout gets its own verdict. A group still not full `timeout_s` (the judge's) after
its first transcript came is judged with those that came; one transcript alone is judged alone, as
is one that comes after its group was judged, or one beyond the group's size.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from agent_env._contracts.judges import GroupInvite, Judge, Scope
from agent_env.judges._judging import JudgeError, Judging
from agent_env.judges._transcript import digest
from agent_env.judges._verdict import Verdict

JUDGED_KEYS_KEPT = 4096
"""Groups judged already, remembered so that a rollout coming late is judged alone at once rather
than waiting for a group that will not fill."""


@dataclass
class _Member:
    judge: Judge
    transcript: dict[str, Any]
    answer: asyncio.Future[tuple[Verdict, int]]


@dataclass
class _Group:
    """One group's seats and the transcripts given so far."""

    key: tuple[str, Scope]
    size: int
    seats: int = 0
    given_up: int = 0
    members: list[_Member] = field(default_factory=list)
    judged: bool = False
    timer: asyncio.TimerHandle | None = None
    judging: asyncio.Task[None] | None = None


class GroupSeat:
    """An episode's place in its group: `verdict` gives its transcript and waits for its verdict (and
    how many rollouts were judged together); `leave` gives the place up if it was never used."""

    def __init__(self, groups: JudgeGroups, group: _Group | None) -> None:
        self._groups = groups
        self._group = group
        self._used = False

    async def verdict(self, judge: Judge, transcript: dict[str, Any]) -> tuple[Verdict, int]:
        """The verdict on `transcript` beside its group's, and how many were judged together (1:
        alone); JudgeError if the judge gave none."""
        self._used = True
        group = self._group
        if group is None or group.judged:
            return await self._groups.judging.verdict(judge, transcript), 1
        answer: asyncio.Future[tuple[Verdict, int]] = asyncio.get_running_loop().create_future()
        group.members.append(_Member(judge, transcript, answer))
        self._groups.filled(group, judge.timeout_s)
        return await asyncio.shield(answer)

    def leave(self) -> None:
        """Give the seat up, if its transcript was never given: the group no longer waits for it."""
        if self._used or self._group is None:
            return
        self._used = True
        self._group.given_up += 1
        self._groups.filled(self._group, None)


_HELD: weakref.WeakKeyDictionary[
    Judging, weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, JudgeGroups]
] = weakref.WeakKeyDictionary()


def seat(judging: Judging, invite: GroupInvite, scope: Scope) -> GroupSeat:
    """A seat in the GRPO group `invite` names, for an episode of the task `scope` judged through
    `judging`: the groups are `judging`'s on the running event loop."""
    loop = asyncio.get_running_loop()
    on_loops = _HELD.setdefault(judging, weakref.WeakKeyDictionary())
    groups = on_loops.get(loop)
    if groups is None:
        groups = on_loops[loop] = JudgeGroups(judging)
    return groups.seat(invite, scope)


class JudgeGroups:
    """The groups of one event loop's episodes being judged together, by client key and task."""

    def __init__(self, judging: Judging) -> None:
        self.judging = judging
        self._open: dict[tuple[str, Scope], _Group] = {}
        self._judged: OrderedDict[tuple[str, Scope], None] = OrderedDict()

    def seat(self, invite: GroupInvite, scope: Scope) -> GroupSeat:
        """A seat in the group `invite` names for the task `scope`; one that judges alone if that group
        was judged already or its seats are all taken."""
        key = (invite.key, scope)
        if key in self._judged:
            return GroupSeat(self, None)
        group = self._open.get(key)
        if group is None:
            group = self._open[key] = _Group(key, invite.size)
        if group.seats >= group.size:
            return GroupSeat(self, None)
        group.seats += 1
        return GroupSeat(self, group)

    def filled(self, group: _Group, wait_s: float | None) -> None:
        """Judge `group` if every seat is filled or given up; else, at its first transcript, judge it
        anyway `wait_s` later."""
        if group.judged:
            return
        if len(group.members) + group.given_up >= group.size:
            self._judge(group)
        elif group.timer is None and group.members and wait_s is not None:
            group.timer = asyncio.get_running_loop().call_later(wait_s, self._judge, group)

    def _judge(self, group: _Group) -> None:
        if group.judged:
            return
        group.judged = True
        if group.timer is not None:
            group.timer.cancel()
        self._open.pop(group.key, None)
        self._judged[group.key] = None
        while len(self._judged) > JUDGED_KEYS_KEPT:
            self._judged.popitem(last=False)
        if group.members:
            group.judging = asyncio.get_running_loop().create_task(self._verdicts(group.members))

    async def _verdicts(self, members: list[_Member]) -> None:
        """Ask each judge of the group (one, as a task has one relative judge) once, for all its
        transcripts in the order of their digests, and answer each member."""
        by_judge: dict[Judge, list[_Member]] = {}
        for member in members:
            by_judge.setdefault(member.judge, []).append(member)
        for judge, judged in by_judge.items():
            judged.sort(key=lambda member: digest(member.transcript))
            try:
                verdicts = await self.judging.verdicts(judge, [member.transcript for member in judged])
            except JudgeError as exc:
                _failed(judged, exc)
                continue
            except Exception as exc:  # not the endpoint's: said as a failure of the judgement all the same
                _failed(judged, JudgeError("unavailable", f"{judge.label}: {type(exc).__name__}: {exc}"))
                continue
            except BaseException:
                for member in judged:
                    member.answer.cancel()
                raise
            for member, verdict in zip(judged, verdicts, strict=True):
                if not member.answer.done():
                    member.answer.set_result((verdict, len(judged)))


def _failed(members: list[_Member], error: JudgeError) -> None:
    for member in members:
        if not member.answer.done():
            member.answer.set_exception(error)
            member.answer.exception()  # retrieved: a member gone is no error
