"""What the engine asks of the judges part: one episode's verdict, and its seat in its GRPO group.

Registered in pyproject.toml as the parts `judges.episode` and `judges.seat`
(`agent_env._contracts.registry`), so the engine judges through them without importing this package;
an episode given no `Judging` is judged through the process's own (`default_judging`).
"""

from __future__ import annotations

from typing import cast

from agent_env._contracts.judges import (
    EpisodeJudge,
    GroupInvite,
    GroupSeating,
    Judge,
    Judgements,
    Scope,
    Seat,
)
from agent_env._error_types import EpisodeError, ErrorCode
from agent_env._trajectory import TurnRecord
from agent_env.judges._groups import GroupSeat, seat
from agent_env.judges._judging import JudgeError, Judging, default_judging
from agent_env.judges._transcript import transcript_of
from agent_env.judges._verdict import Verdict


async def judge_episode(
    judge: Judge,
    *,
    judging: Judgements | None,
    system_prompt: str | None,
    turns: list[TurnRecord],
    seat: Seat | None,
) -> tuple[Verdict, int]:
    """The judge's verdict on the episode whose turns these are, and how many episodes it read together
    (beside its group, at `seat`, or alone); EpisodeError VERIFIER_FAILED when the judge gives none."""
    transcript = transcript_of(system_prompt, turns, judge.reads)
    try:
        if seat is not None:
            return await cast(GroupSeat, seat).verdict(judge, transcript)
        return await _judging(judging).verdict(judge, transcript), 1
    except JudgeError as exc:
        raise EpisodeError(ErrorCode.VERIFIER_FAILED, f"{exc}: the episode is unscorable") from None


def seat_in_group(judging: Judgements | None, invite: GroupInvite, scope: Scope) -> GroupSeat:
    """The episode's seat in the group `invite` names, among the episodes of the task `scope` names."""
    return seat(_judging(judging), invite, scope)


def _judging(judging: Judgements | None) -> Judging:
    return cast(Judging, judging) if judging is not None else default_judging()


REGISTERED: tuple[EpisodeJudge, GroupSeating] = (judge_episode, seat_in_group)
"""What this module registers (pyproject.toml), held to the engine's contracts by the type checker."""
