"""An MCP server's tools as the episode checks them: a result's structured content against the tool's
output schema, on a worker thread and with RE2, as its arguments are; a tool whose output schema the
bundle cannot check is not offered.

Before, the SDK checked the structured content itself, on the event loop, with Python's backtracking
`re` (and the schema checked again at every call)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp import types

from agent_env import Episode, EpisodeError, EpisodeState, ErrorCode, load_bundle
from agent_env.mcp import McpServerConfig
from agent_env.mcp._schemas import MAX_SCHEMA_VALUES
from agent_env.mcp._tools import listed_tools
from tst.support.mcp_bundles import a_notes_task, hostile_server, notes_bundle
from tst.support.mcp_server import SHAPED_CODE, SLOW_PATTERN, fan_out_schema

pytestmark = pytest.mark.needs("mcp_installed")


def test_structured_content_its_output_schema_refuses_is_a_tool_error_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    task = a_notes_task(verifiers=[{"type": "reply", "contains": "done"}])
    episode = Episode(
        load_bundle(notes_bundle(tmp_path, hostile_server("shaped"), tasks=[task])).task("train", 0)
    )

    async def main() -> tuple[EpisodeError, str]:
        try:
            await episode.deploy()
            with pytest.raises(EpisodeError) as caught:
                await episode.call_tool("shaped", {})
            assert episode.state is EpisodeState.TURN_OPEN
            return caught.value, await episode.call_tool("echo", {"text": "still here"})
        finally:
            await episode.teardown()

    failed, after = asyncio.run(main())

    assert failed.code == ErrorCode.TOOL_ERROR
    assert failed.message == (
        f"shaped failed: MCP server 'notes' answered structured content its output schema refuses: field "
        f"'code': {SHAPED_CODE!r} does not match {SLOW_PATTERN!r}"
    )
    assert after == '{"text": "still here"}'


def test_a_tool_whose_output_schema_fans_out_is_listed_refused_and_the_server_s_others_are_offered() -> None:
    listed = [
        types.Tool(name="echo", inputSchema={"type": "object"}),
        types.Tool(name="deep", inputSchema={"type": "object"}, outputSchema=fan_out_schema(30)),
    ]

    tools = listed_tools("notes", McpServerConfig(command="notes-server"), listed)

    assert [(tool.name, tool.refused) for tool in tools] == [
        ("echo", None),
        (
            "deep",
            f"its output schema holds over {MAX_SCHEMA_VALUES} values once its $refs are inlined, as the "
            "model is shown it: refer to each $defs entry fewer times, or give the tool fewer arguments",
        ),
    ]
