"""Scripted plays: a policy written down as tool calls and replies, turn by turn.

A bundle may keep a reference play of each task in `solutions/SPLIT.jsonl`; playing them proves the
tasks can be solved and that their verifiers score a correct play 1.0. The demo and the tests use it.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent_env._bundle.reader import Bundle
from agent_env._episode import Episode
from agent_env._error_types import EpisodeError
from agent_env._specs import (
    ScriptedTurn,
    Solution,
)


@dataclass
class ReplayResult:
    """How a play went: the score (None when the episode failed), and what each step answered."""

    score: float | None = None
    error: str | None = None
    tool_calls: int = 0
    transcript: list[str] = field(default_factory=list)
    failed_call: str | None = None
    """The first call the episode refused, and why: what to fix first when the score is wrong."""
    verifier_scores: tuple[float, ...] = ()
    """Each verifier's score, in the task's order, once the play was scored."""
    verifier_details: tuple[str, ...] = ()
    """What each verifier said beside its score, in the task's order ("" for one that said nothing;
    empty when none did): a test script's output tail, say."""
    seconds: float | None = field(default=None, compare=False)
    """How long the play took, from its deploy to its teardown's end (no part of what it scored, so
    not compared)."""

    def why(self, verifiers: Sequence[str]) -> str:
        """Why the play scored what it did, in a line: its error, else each verifier's score (headed by
        `verifiers`, their `verifier_labels` in the task's order) and the first call that failed."""
        if self.error is not None:
            return self.error
        scores = zip(verifiers, self.verifier_scores, strict=False)
        parts = [", ".join(f"{name}: {score:g}" for name, score in scores) or "not scored"]
        if self.failed_call is not None:
            parts.append(f"first failed call: {self.failed_call}")
        return "; ".join(parts)

    def said(self, verifiers: Sequence[str]) -> str:
        """What the verifiers said beside their scores, each under its label (`verifiers`, their
        `verifier_labels` in the task's order), its text indented; "" when none said anything."""
        return "\n".join(
            f"{name} said:\n" + textwrap.indent(detail, "  ")
            for name, detail in zip(verifiers, self.verifier_details, strict=False)
            if detail
        )


async def replay(episode: Episode, turns: Sequence[ScriptedTurn]) -> ReplayResult:
    """Deploy, play `turns` (ending any turn the script leaves open with an empty reply), tear down."""
    result = ReplayResult()
    started = time.perf_counter()
    try:
        prompt: str | None = await episode.deploy()
        turn = 0
        while prompt is not None:
            result.transcript.append(f"user: {prompt}")
            scripted = turns[turn] if turn < len(turns) else ScriptedTurn()
            for call in scripted.all_calls:  # the engine has no answers: a step's calls run in order
                result.tool_calls += 1
                try:
                    answer = await episode.call_tool(call.tool, call.arguments)
                except EpisodeError as exc:
                    answer = f"error: {exc}"
                    if result.failed_call is None:
                        result.failed_call = f"{call.tool}({json.dumps(call.arguments)}): {exc}"
                result.transcript.append(f"{call.tool}({json.dumps(call.arguments)}) -> {answer}")
                if episode.final is not None:  # its time limit ran out: scored as it stood
                    break
            end = episode.final or await episode.end_turn(scripted.reply)
            result.transcript.append(f"assistant: {scripted.reply}")
            prompt, turn = end.prompt, turn + 1
            if end.done:
                result.score, result.verifier_scores = end.score, end.verifier_scores
                result.verifier_details = end.verifier_details
    except EpisodeError as exc:
        result.error = str(exc)
    finally:
        await episode.teardown()
        result.seconds = time.perf_counter() - started
    return result


async def replay_many(
    plays: Sequence[tuple[Episode, Sequence[ScriptedTurn]]], *, concurrency: int = 1
) -> list[ReplayResult]:
    """Each episode played with its turns as `replay` plays it, up to `concurrency` at once; the
    results in the plays' order, whichever ended first. A dataset's plays mostly wait (on their
    containers, their commands, their verifiers), so they overlap well."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        from agent_env._errors import ArgumentError

        raise ArgumentError(f"concurrency must be a positive integer, got {concurrency!r}")
    slots = asyncio.Semaphore(concurrency)

    async def one(episode: Episode, turns: Sequence[ScriptedTurn]) -> ReplayResult:
        async with slots:
            return await replay(episode, turns)

    return list(await asyncio.gather(*(one(episode, turns) for episode, turns in plays)))


def load_solutions(bundle: Bundle, split: str) -> dict[str, Solution]:
    """The reference plays of `split` by task id (checked when the bundle loaded); empty when the
    bundle keeps none."""
    return dict(bundle.solutions.get(split, {}))
