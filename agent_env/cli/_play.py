"""`agent-env play`: a person plays one task in the terminal, as the trained model would."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Callable
from typing import Any, TextIO

from agent_env._episode import Episode
from agent_env._error_types import EpisodeError
from agent_env._task import Task
from agent_env._verifiers import verifier_labels
from agent_env.judges._judging import Judging

HELP = """\
Commands:
  TOOL {"arg": value, ...}   call a tool with JSON arguments (TOOL alone when it takes none)
  /end REPLY                 end the turn with your reply
  /tools                     list the tools again
  /quit                      stop, tearing the episode down"""


def describe_tools(tools: list[dict[str, Any]]) -> str:
    lines = []
    for schema in tools:
        function = schema["function"]
        params = function["parameters"].get("properties", {})
        required = set(function["parameters"].get("required", []))
        args = ", ".join(f"{name}{'' if name in required else '?'}: {_type(p)}" for name, p in params.items())
        lines.append(f"  {function['name']}({args}) - {function['description']}")
    return "\n".join(lines)


_CONSTRAINTS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("exclusiveMaximum", "<"),
    ("minLength", "length >="),
    ("maxLength", "length <="),
    ("minItems", "items >="),
    ("maxItems", "items <="),
    ("pattern", "matching"),
    ("format", "format"),
)
"""The JSON Schema keywords that bound an argument, and how the terminal words each."""


def _type(prop: dict[str, Any]) -> str:
    """An argument's type as the schema has it, with its bounds, pattern and default: what a person
    needs to call the tool right (`integer 1..5000`, `string matching ^[A-Z][0-9]{2}$`, `= 10`)."""
    if "enum" in prop:
        shown = "|".join(json.dumps(v) for v in prop["enum"])
    elif "anyOf" in prop:
        shown = "|".join(_type(p) for p in prop["anyOf"])
    elif prop.get("type") == "array" and isinstance(prop.get("items"), dict):
        shown = f"array of {_type(prop['items'])}"
    else:
        shown = str(prop.get("type", "any"))
    low, high = prop.get("minimum"), prop.get("maximum")
    bounds = [] if low is None or high is None else [f"{json.dumps(low)}..{json.dumps(high)}"]
    paired = {"minimum", "maximum"} if bounds else set()
    bounds += [
        f"{words} {_shown(prop[key])}" for key, words in _CONSTRAINTS if key in prop and key not in paired
    ]
    if "default" in prop:
        bounds.append(f"= {json.dumps(prop['default'])}")
    return " ".join([shown, *bounds])


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


async def play_in_terminal(
    task: Task,
    read: Callable[[str], str],
    out: TextIO,
    *,
    sandbox: str | None = None,
    judging: Judging | None = None,
) -> float | None:
    """Play `task` with commands read line by line; returns the score, or None when abandoned.
    `judging` is what its `judge` verifiers ask through (None: the process's own)."""
    episode = Episode(task, provider=sandbox, judging=judging)

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    fixed = f"{len(task.turns)} turn{'s' if len(task.turns) != 1 else ''}"
    if task.user is not None:
        fixed += f", then a simulated user ({task.user.label}), up to {task.max_turns} in all"
    say(f"task {task.id} (split {task.split}, index {task.index}), toolset {task.toolset.name}, {fixed}")
    try:
        prompt = await episode.deploy()
        if task.agent.system_prompt:
            say(f"\nsystem: {task.agent.system_prompt}")
        say(f"\nturn 1, user: {prompt}\n\ntools:\n{describe_tools(episode.tools)}\n\n{HELP}")
        while True:
            try:
                line = (await asyncio.to_thread(read, "> ")).strip()
            except EOFError:
                say("\nabandoned: the episode is torn down unscored")
                return None
            if not line:
                continue
            if line == "/quit":
                say("abandoned: the episode is torn down unscored")
                return None
            if line == "/tools":
                say(describe_tools(episode.tools))
                continue
            if line == "/help":
                say(HELP)
                continue
            if line == "/end" or line.startswith("/end "):
                end = await episode.end_turn(line[len("/end") :].strip())
                if end.done:
                    labels = verifier_labels(task.verifiers)
                    for label, detail in zip(labels, end.verifier_details, strict=False):
                        if detail:  # what it said first, so that the scores are the last lines
                            say(f"{label} said:\n{textwrap.indent(detail, '  ')}")
                    for label, score in zip(labels, end.verifier_scores, strict=False):
                        say(f"{label}: {score:.2f}")  # each one's part, then the task's score
                    say(f"score: {end.score:.2f}")
                    return end.score
                by = "user (simulated)" if end.turn > len(task.turns) else "user"
                say(f"\nturn {end.turn}, {by}: {end.prompt}")
                continue
            name, _, raw = line.partition(" ")
            try:
                arguments = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                say(f'error: the arguments are not JSON ({exc.msg}); write them as {{"name": value}}')
                continue
            try:
                say(await episode.call_tool(name, arguments))
            except EpisodeError as exc:
                say(f"error: {exc}")
    except EpisodeError as exc:
        say(f"error: {exc}")
        return None
    finally:
        await episode.teardown()
        if judging is not None:
            await judging.aclose()
