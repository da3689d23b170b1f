"""`agent-env play`: a person plays one task in the terminal, as the trained model would."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TextIO

from agent_env.episode import Episode
from agent_env.errors import EpisodeError
from agent_env.task import Task

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


def _type(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "|".join(json.dumps(v) for v in prop["enum"])
    if "anyOf" in prop:
        return "|".join(_type(p) for p in prop["anyOf"])
    return str(prop.get("type", "any"))


async def play_in_terminal(
    task: Task, read: Callable[[str], str], out: TextIO, *, sandbox: str | None = None
) -> float | None:
    """Play `task` with commands read line by line; returns the score, or None when abandoned."""
    episode = Episode(task, provider=sandbox)

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
