"""An episode's trajectory, made from its events (`trajectory_of`): what a server records of each
episode it plays. Apart from the schema (`agent_env._trajectory`), which depends on the events alone.
"""

from __future__ import annotations

import typing
from typing import Any

from agent_env._events import Deployed, Scored, TornDown, TurnEnded
from agent_env._trajectory import Trajectory, _turns_of

if typing.TYPE_CHECKING:
    from agent_env._episode import Episode


def trajectory_of(episode: Episode, *, client: str | None = None) -> Trajectory:
    """The trajectory of an episode, from its events; complete once it is torn down.

    It is built as plain data and validated once, in one call: a server makes one per episode, on
    its event loop, and a model per call and per turn would cost twice as much.
    """
    task = episode.task
    timings: dict[str, float | None] = {"deploy_s": None, "verify_s": None, "teardown_s": None}
    verifiers: list[dict[str, Any]] = []
    last_reply_at: float | None = None
    for event in episode.events:
        if isinstance(event, Deployed):
            timings["deploy_s"] = event.seconds
        elif isinstance(event, TurnEnded):
            last_reply_at = event.at
        elif isinstance(event, Scored):
            if last_reply_at is not None:
                timings["verify_s"] = event.at - last_reply_at
            components = list(event.components) or [{} for _ in event.verifier_scores]
            details = list(event.details) or ["" for _ in event.verifier_scores]
            verifiers = [
                {"type": verifier.spec.type, "weight": verifier.spec.weight, "score": score}
                | ({"name": verifier.name} if verifier.name != verifier.spec.type else {})
                | ({"components": dict(named)} if named else {})
                | ({"detail": detail} if detail else {})
                for verifier, score, named, detail in zip(
                    task.verifiers, event.verifier_scores, components, details, strict=False
                )
            ]
        elif isinstance(event, TornDown):
            timings["teardown_s"] = event.seconds
    turns = _turns_of(episode.events, task.turns)
    outcome = episode.outcome
    ended_at = episode.events[-1].at if episode.events else None
    started_at = episode.started_at
    if ended_at is not None and started_at is not None:
        timings["total_s"] = ended_at - started_at
    return Trajectory.model_validate(
        {
            "recorded_by": "server",
            "client": client,
            "task": {"split": task.split, "index": task.index, "id": task.id, "toolset": task.toolset.name},
            "system_prompt": task.agent.system_prompt or None,
            "started_at": started_at,
            "ended_at": ended_at,
            "turns": turns,
            "verifiers": verifiers,
            "score": outcome.score if outcome is not None and outcome.kind == "scored" else None,
            "outcome": {
                "kind": outcome.kind if outcome is not None else "abandoned",
                "code": outcome.code if outcome is not None else None,
                "reason": outcome.reason if outcome is not None else "",
            },
            "timings": timings,
        }
    )
