"""ATIF-v1.7 as the tests check it: a JSON Schema written from the RFC's field tables, and the rules
beside it that JSON Schema cannot say, as Harbor's own models check them.

`atif-v1.7.schema.json` is this project's reading of Harbor's RFC 0001 (v1.7, April 2026), not a copy
of anyone's file; `rfc-example.json` is the RFC's example trajectory (its section IV), typed in, so a
test holds the schema to the spec. The schema is checked with the `jsonschema` package, which the
locked dev install has (a test that calls `atif_problems` needs `dev_installed`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCHEMA: dict[str, Any] = json.loads((HERE / "atif-v1.7.schema.json").read_text(encoding="utf-8"))
RFC_EXAMPLE: dict[str, Any] = json.loads((HERE / "rfc-example.json").read_text(encoding="utf-8"))


def atif_problems(document: Any) -> list[str]:
    """Every way `document` is not a valid ATIF-v1.7 trajectory, each as `where: what`; [] if none."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    problems = [
        f"{'/'.join(str(part) for part in error.absolute_path) or '(root)'}: {error.message}"
        for error in validator.iter_errors(document)
    ]
    return problems or _beyond_the_schema(document, "")


def _beyond_the_schema(trajectory: dict[str, Any], where: str) -> list[str]:
    """Harbor's checks of a trajectory that a schema cannot make: step ids 1, 2, 3...; a step's tool
    call ids unique; each result's source_call_id one of its own step's calls; embedded subagents with
    unique trajectory ids, which a reference without a path must name."""
    problems = []
    for number, step in enumerate(trajectory["steps"], 1):
        at = f"{where}steps/{number - 1}"
        if step["step_id"] != number:
            problems.append(f"{at}/step_id: {step['step_id']}, not {number} (sequential from 1)")
        ids = [call["tool_call_id"] for call in step.get("tool_calls") or []]
        if len(set(ids)) != len(ids):
            problems.append(f"{at}/tool_calls: a tool_call_id repeated in {ids}")
        for index, result in enumerate((step.get("observation") or {}).get("results", [])):
            source = result.get("source_call_id")
            if source is not None and source not in ids:
                problems.append(
                    f"{at}/observation/results/{index}: source_call_id {source!r} is not in {ids}"
                )
    embedded = [sub["trajectory_id"] for sub in trajectory.get("subagent_trajectories") or []]
    if len(set(embedded)) != len(embedded):
        problems.append(f"{where}subagent_trajectories: a trajectory_id repeated in {embedded}")
    for step in trajectory["steps"]:
        for result in (step.get("observation") or {}).get("results", []):
            for ref in result.get("subagent_trajectory_ref") or []:
                if not ref.get("trajectory_path") and ref.get("trajectory_id") not in embedded:
                    problems.append(f"{where}step {step['step_id']}: {ref} names no embedded subagent")
    for index, sub in enumerate(trajectory.get("subagent_trajectories") or []):
        problems += _beyond_the_schema(sub, f"{where}subagent_trajectories/{index}/")
    return problems
