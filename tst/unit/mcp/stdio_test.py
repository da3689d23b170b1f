"""A stdio server's messages as the episode reads them, from a server written by hand
(`mcp_server.py --hostile`): text that is not valid Unicode is made valid and said, once; a line that
is not JSON-RPC fails the call it names at once, and one that names none (a banner) is skipped.

Before, each of these left a call (or the listing) waiting for an answer that never came: pydantic's
JSON parser refuses a whole message for one lone surrogate, the transport handed the SDK's session the
error in place of the message, and the session's default handler drops errors: so a tool's result
with one ended the episode at `call_timeout_s`, a name or description with one failed the deploy at
`start_timeout_s`, saying the server "did not start"."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from agent_env import Episode, EpisodeError, EpisodeState, ErrorCode, load_bundle
from tst.support.mcp_bundles import a_notes_task, hostile_server, notes_bundle

pytestmark = pytest.mark.needs("mcp_installed")

NOT_UNICODE = (
    "its name held a lone surrogate, which is not valid Unicode (or U+FFFD, which replaces one): no call "
    "can name it as the server does; give it a name of valid Unicode in the server"
)
DEADLINE_S = 3.0
"""The server's start_timeout_s and call_timeout_s: what the old code waited out."""


def episode_of(root: Path) -> Episode:
    return Episode(load_bundle(root).task("train", 0))


def bundle(root: Path, *tools: str) -> Path:
    server = hostile_server(*tools, start_timeout_s=DEADLINE_S, call_timeout_s=DEADLINE_S)
    return notes_bundle(root, server, tasks=[a_notes_task(verifiers=[{"type": "reply", "contains": "done"}])])


def test_lone_surrogates_in_a_description_and_a_result_read_as_u_fffd_and_a_name_with_one_is_not_offered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    episode = episode_of(bundle(tmp_path, "bad_name", "bad_description", "surrogate"))

    async def main() -> tuple[str, EpisodeError]:
        try:
            await episode.deploy()
            answer = await episode.call_tool("surrogate", {})
            with pytest.raises(EpisodeError) as refused:
                await episode.call_tool("bad\ufffdname", {})
            return answer, refused.value
        finally:
            await episode.teardown()

    with caplog.at_level(logging.WARNING, logger="agent_env.mcp"):
        answer, refused = asyncio.run(main())

    assert answer == "a\ufffdb"
    offered = {tool["function"]["name"]: tool["function"]["description"] for tool in episode.tools}
    assert offered == {
        "echo": "Answer the text given.",
        "described": "A description with a lone surrogate: \ufffd.",
        "surrogate": "Answer text with a lone surrogate in it.",
    }
    assert refused.code == ErrorCode.UNKNOWN_TOOL
    assert refused.message.startswith(
        f"tool 'bad\ufffdname' of MCP server 'notes' is not offered: {NOT_UNICODE}"
    )
    said = [record.getMessage() for record in caplog.records if "Unicode" in record.getMessage()]
    assert said == [
        "MCP server 'notes' sent text that is not valid Unicode (a lone surrogate, or bytes that are not "
        "UTF-8): each was replaced by U+FFFD",
        f"MCP server 'notes' lists tool 'bad\ufffdname', which is not offered: {NOT_UNICODE}; "
        "its other tools are",
    ]


def test_an_answer_that_is_not_json_rpc_fails_its_call_at_once_and_the_turn_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    episode = episode_of(bundle(tmp_path, "garbled"))

    async def main() -> tuple[EpisodeError, str]:
        try:
            await episode.deploy()
            with pytest.raises(EpisodeError) as failed:
                await episode.call_tool("garbled", {})
            assert episode.state is EpisodeState.TURN_OPEN
            return failed.value, await episode.call_tool("echo", {"text": "still here"})
        finally:
            await episode.teardown()

    with caplog.at_level(logging.WARNING, logger="agent_env.mcp"):
        failed, after = asyncio.run(main())

    assert failed.code == ErrorCode.TOOL_ERROR
    assert failed.message == (
        "garbled failed: MCP server 'notes' answered with what is not a JSON-RPC message (Invalid JSON: EOF "
        "while parsing a list at line 1 column 51)"
    )
    assert after == '{"text": "still here"}'
    assert [record.getMessage() for record in caplog.records] == [
        "MCP server 'notes' wrote a line to stdout that is not a JSON-RPC message, skipped (Invalid JSON: "
        "expected value at line 1 column 1): 'hostile server ready (a banner on stdout, which is no message)'"
    ]
