"""MCP servers that would stall the server that uses them: a tool schema whose `$refs` fan out, a schema
pattern that backtracks. The server here is real (uvicorn on loopback) and so is the MCP server
(`tst/support/mcp_server.py --hostile`, a process written by hand); each hostile tool is refused or
answered at once, saying what to fix, while `/health` and another session answer as ever.

Before, the fan-out schema was inlined on the event loop without bound (20 levels: 3.8 s and 320 MiB,
40 levels: 19 GB), and a pattern like `(a+)+$` was matched by Python's backtracking `re`, on the loop
(24 `a`s and a `!`: 2.4 s, twice as long for each more).
"""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from agent_env import ErrorCode
from agent_env.mcp._schemas import MAX_SCHEMA_VALUES
from agent_env.openenv import AgentEnvAction, build_app
from tst.support.mcp_bundles import a_notes_task, hostile_server, notes_bundle
from tst.support.mcp_server import SLOW_NAMES, SLOW_PATTERN
from tst.support.serving import Connect, Serve
from tst.support.waiting import WAIT_S

pytestmark = pytest.mark.needs("mcp_installed")

ANSWER_S = 5.0
"""How long a client waits for any answer: far longer than any of these takes now, far shorter than
the old backtracking (27 `a`s: about 20 s)."""
BACKTRACKING = "a" * 27 + "!"


def bundle(root: Path, *tools: str) -> Path:
    task = a_notes_task(verifiers=[{"type": "reply", "contains": "done"}])
    return notes_bundle(root, hostile_server(*tools, start_timeout_s=ANSWER_S), tasks=[task])


def tool_names(tools: list[dict[str, object]]) -> list[object]:
    return [tool["function"]["name"] for tool in tools]  # type: ignore[index]


def test_a_tool_whose_schema_refs_fan_out_is_refused_saying_why_while_its_server_s_other_tools_are_served(
    tmp_path: Path, serve: Serve, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(build_app(bundle(tmp_path, "deep")))
    first, second = (
        connect(server.url, message_timeout_s=ANSWER_S),
        connect(server.url, message_timeout_s=ANSWER_S),
    )

    with caplog.at_level(logging.WARNING, logger="agent_env.mcp"):
        started = first.reset(split="train", index=0)
        refused = first.step(AgentEnvAction.call_tool("deep", {"tree": "x"}).wire())
        health = httpx.get(f"{server.url}/health", timeout=WAIT_S)
        other = second.reset(split="train", index=0)
        echoed = second.step(AgentEnvAction.call_tool("echo", {"text": "still here"}).wire())

    assert tool_names(started.observation["tools"]) == ["echo"]
    error = refused.observation["error"]
    assert error["code"] == ErrorCode.UNKNOWN_TOOL
    assert error["message"].startswith(
        f"tool 'deep' of MCP server 'notes' is not offered: its input schema holds over {MAX_SCHEMA_VALUES} "
        "values once its $refs are inlined, as the model is shown it: refer to each $defs entry fewer "
        "times, or give the tool fewer arguments"
    )
    assert health.status_code == 200
    assert tool_names(other.observation["tools"]) == ["echo"]
    assert echoed.observation["result"] == '{"text": "still here"}'
    said = [r.getMessage() for r in caplog.records if "'deep'" in r.getMessage()]
    assert said == [
        "MCP server 'notes' lists tool 'deep', which is not offered: its input schema holds over "
        f"{MAX_SCHEMA_VALUES} values once its $refs are inlined, as the model is shown it: refer to each "
        "$defs entry fewer times, or give the tool fewer arguments; its other tools are"
    ]  # once, for two episodes


def test_a_schema_pattern_that_backtracks_checks_arguments_at_once_while_health_and_another_session_answer(
    tmp_path: Path, serve: Serve, connect: Connect
) -> None:
    server = serve(build_app(bundle(tmp_path, "match")))
    first, second = (
        connect(server.url, message_timeout_s=ANSWER_S),
        connect(server.url, message_timeout_s=ANSWER_S),
    )
    first.reset(split="train", index=0)
    second.reset(split="train", index=0)

    word = first.step(AgentEnvAction.call_tool("match", {"word": BACKTRACKING}).wire())
    name = first.step(AgentEnvAction.call_tool("match", {"word": "aa", "b" * 27 + "!": 1}).wire())
    matched = first.step(AgentEnvAction.call_tool("match", {"word": "aaa", "bb": 2}).wire())
    health = httpx.get(f"{server.url}/health", timeout=WAIT_S)
    echoed = second.step(AgentEnvAction.call_tool("echo", {"text": "still here"}).wire())

    assert word.observation["error"]["code"] == ErrorCode.INVALID_ARGUMENTS
    assert word.observation["error"]["message"] == (
        f"match: argument 'word': {BACKTRACKING!r} does not match {SLOW_PATTERN!r} (arguments: word)"
    )
    assert name.observation["error"]["message"] == (
        f"match: {'b' * 27 + '!'!r} does not match any of the regexes: {SLOW_NAMES!r} (arguments: word)"
    )
    assert matched.observation["result"] == '{"bb": 2, "word": "aaa"}'
    assert health.status_code == 200
    assert echoed.observation["result"] == '{"text": "still here"}'
