"""Trajectories as ATIF, the Agent Trajectory Interchange Format that Harbor, NeMo's tools and OpenEnv read.

ATIF (Harbor's RFC 0001, version 1.7) is one JSON document per episode: the agent, then its steps,
each a system prompt, a user's message or an agent's answer (its tool calls, their results in its
`observation`). `to_atif` maps one `Trajectory` onto it: the prompt of each turn as a user step, each
answer of the agent as an agent step with the calls it made together, the reply that ended the turn
as an agent step of its own, and the outcome as a last system step, its verifiers as the results of
that step. What ATIF has no field for (the task, the score, the outcome, the timings) is kept in its
`extra` objects, so nothing the trajectory held is lost. `export_atif` writes each trajectory of a
folder or file as `<id>/agent/trajectory.json`, the path at which a Harbor trial keeps its agent's
trajectory. The mapping, field by field, is in docs/guides/trajectories.md.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_env._errors import ArgumentError
from agent_env._trajectory import ToolCallRecord, Trajectory, TurnRecord, VerifierRecord
from agent_env._trajectory_reader import _log_skipped, read_trajectories
from agent_env._unicode import valid_data

ATIF_VERSION = "ATIF-v1.7"
AGENT_NAME = "agent-env"
TRAJECTORY_FILE = Path("agent") / "trajectory.json"
"""Where in an episode's folder its ATIF document is written: where a Harbor trial keeps its agent's."""

_NOTES = (
    "Exported by agent-env from its trajectory (schema {version}). The episode's score, outcome, "
    "verifiers, task and timings are in `extra`; the last step, of source system, says how the episode "
    "ended, each verifier a result of its observation."
)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def to_atif(trajectory: Trajectory) -> dict[str, Any]:
    """`trajectory` as an ATIF-v1.7 document (JSON-ready: plain dicts, lists, strings and numbers)."""
    steps: list[dict[str, Any]] = []

    def add(source: str, message: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(steps) + 1, "source": source, "message": message}
        step.update((key, value) for key, value in fields.items() if value is not None)
        steps.append(step)
        return step

    started = _timestamp(trajectory.started_at)
    if trajectory.system_prompt is not None:
        add("system", trajectory.system_prompt, timestamp=started)
    for turn in trajectory.turns:
        _add_turn(turn, add, started if not steps else None)
    add(
        "system",
        _ending(trajectory),
        timestamp=_timestamp(trajectory.ended_at),
        observation=_verifiers(trajectory.verifiers),
        extra={"outcome": trajectory.outcome.kind},
    )
    agent: dict[str, Any] = {"name": AGENT_NAME, "version": _version()}
    if trajectory.model is not None:
        agent["model_name"] = trajectory.model
    agent["extra"] = {"recorded_by": trajectory.recorded_by} | (
        {"client": trajectory.client} if trajectory.client is not None else {}
    )
    return {
        "schema_version": ATIF_VERSION,
        "session_id": trajectory.id,
        "trajectory_id": trajectory.id,
        "agent": agent,
        "steps": steps,
        "notes": _NOTES.format(version=trajectory.schema_version),
        "final_metrics": {
            "total_steps": len(steps),
            "extra": {"tool_calls": trajectory.tool_calls, "tool_failures": trajectory.tool_failures},
        },
        "extra": _extra(trajectory),
    }


@functools.cache
def _version() -> str:
    """The installed agent-env's version: the exporter's (a trajectory does not record the recorder's)."""
    try:
        return importlib.metadata.version("agentenv-framework")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree never installed
        return "unknown"


def _add_turn(turn: TurnRecord, add: Callable[..., dict[str, Any]], timestamp: str | None) -> None:
    """A turn's steps: its prompt (the user's), each answer of the agent with the calls it made together
    and their results, and the reply that ended it (none when the episode ended within the turn)."""
    about = {"turn": turn.turn}
    add("user", turn.prompt, timestamp=timestamp, extra=about | {"prompt_by": turn.prompt_by})
    numbered = 0
    for calls in turn.steps:
        tool_calls, results = [], []
        for call in calls:
            numbered += 1
            call_id = f"call-{turn.turn}-{numbered}"
            tool_calls.append(
                {"tool_call_id": call_id, "function_name": call.tool, "arguments": call.arguments}
            )
            results.append(_result(call_id, call))
        add("agent", "", tool_calls=tool_calls, observation={"results": results}, extra=about)
    ending = about | ({"invalid_tool_calls": turn.invalid_tool_calls} if turn.invalid_tool_calls else {})
    if turn.reply is not None:
        add("agent", turn.reply, extra=ending | {"end_turn": True})


def _result(call_id: str, call: ToolCallRecord) -> dict[str, Any]:
    """What a call's result is in ATIF: its text, or the error the agent saw, with its code in `extra`."""
    result: dict[str, Any] = {"source_call_id": call_id}
    extra: dict[str, Any] = {}
    if call.error_code is not None or call.error is not None:
        result["content"] = f"error: {call.error if call.error is not None else call.error_code}"
        extra["error_code"] = call.error_code
    elif call.result is not None:
        result["content"] = call.result
    else:
        extra["answered"] = False  # the episode ended while the call ran
    if call.seconds is not None:
        extra["seconds"] = call.seconds
    if call.step is not None:
        extra["step"] = call.step
    if extra:
        result["extra"] = extra
    return result


def _ending(trajectory: Trajectory) -> str:
    """The last step's message: how the episode ended, in a sentence."""
    outcome = trajectory.outcome
    why = f" ({outcome.code})" if outcome.code else ""
    reason = f": {outcome.reason}" if outcome.reason else ""
    if outcome.kind == "scored":
        score = "no score" if trajectory.score is None else f"{trajectory.score:g}"
        return f"The episode was scored: {score}."
    if outcome.kind == "failed":
        return f"The episode failed{why}{reason}; it has no score."
    if outcome.kind == "error":
        return f"The model's side failed{why}{reason}; the episode has no score."
    return f"The episode was abandoned before it was scored{reason}."


def _verifiers(verifiers: list[VerifierRecord]) -> dict[str, Any] | None:
    """Each verifier's score as a result of the last step's observation (with what it said on the
    lines below), its record in `extra`."""
    if not verifiers:
        return None
    results = []
    for verifier in verifiers:
        named = ", ".join(f"{name} {value:g}" for name, value in verifier.components.items())
        content = f"{verifier.type}: {verifier.score:g} (weight {verifier.weight:g})"
        said = f"\n{verifier.detail}" if verifier.detail else ""  # below, what it said: test.sh's last lines
        results.append(
            {
                "content": content + (f"; {named}" if named else "") + said,
                "extra": verifier.model_dump(mode="json"),
            }
        )
    return {"results": results}


def _extra(trajectory: Trajectory) -> dict[str, Any]:
    """What ATIF has no field for, under the trajectory's own names."""
    return {
        "agent_env_schema_version": trajectory.schema_version,
        "task": trajectory.task.model_dump(mode="json"),
        "score": trajectory.score,
        "outcome": trajectory.outcome.model_dump(mode="json"),
        "verifiers": [verifier.model_dump(mode="json") for verifier in trajectory.verifiers],
        "timings": trajectory.timings.model_dump(mode="json"),
        "started_at": trajectory.started_at,
        "ended_at": trajectory.ended_at,
    }


def _timestamp(seconds: float | None) -> str | None:
    """Seconds since the epoch as ISO 8601 in UTC, as ATIF's timestamps are written."""
    if seconds is None:
        return None
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class AtifExport:
    """What `export_atif` did: the documents it wrote, and how many lines it skipped."""

    written: tuple[Path, ...]
    skipped: int


def export_atif(
    source: str | Path, out: str | Path, *, skipped: Callable[[Path, int, str], None] | None = None
) -> AtifExport:
    """Every trajectory in `source` (a folder of `*.jsonl` files, or one file, as `read_trajectories`
    reads them) written as ATIF to `out/<id>/agent/trajectory.json`, `<id>` being the episode's id (a
    name safe for a folder: an id that is not one, or that came before, is made one). A line that is
    not a trajectory is skipped, counted and handed to `skipped` (file, line, why), else logged."""
    source, out = Path(source), Path(out)
    if not source.exists():
        raise ArgumentError(
            f"there is no file or folder at {source}: pass a folder of trajectories (agent-env serve "
            "--record, agent-env eval --out) or one of their .jsonl files"
        )
    if out.exists() and not out.is_dir():
        raise ArgumentError(f"{out} is a file: pass a folder (made if missing) to write the documents in")
    count = 0

    def skip(file: Path, line: int, why: str) -> None:
        nonlocal count
        count += 1
        (skipped or _log_skipped)(file, line, why)

    written: list[Path] = []
    names: set[str] = set()
    for trajectory in read_trajectories(source, skipped=skip):
        name = _folder_name(trajectory.id, names)
        written.append(_write(out / name / TRAJECTORY_FILE, to_atif(trajectory)))
    return AtifExport(tuple(written), count)


def _folder_name(episode: str, taken: set[str]) -> str:
    """The folder an episode's document goes in: its id when that is a safe, new name; else one made
    from it (a digest for an id that is not a safe name, a number after one that came before)."""
    base = (
        episode
        if _SAFE_NAME.fullmatch(episode)
        else "episode-" + hashlib.sha256(episode.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    )
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}-{number}"
    taken.add(name)
    return name


def _write(path: Path, document: dict[str, Any]) -> Path:
    """`document` as indented UTF-8 JSON at `path`, whole or not at all (written aside, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        aside.write_text(
            json.dumps(valid_data(document), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        os.replace(aside, path)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise
    return path
