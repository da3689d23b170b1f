"""What a URL server may send, bounded by `max_result_bytes`: an answer counted as it decompresses, each
event of a GET stream, a call's answer resumed over GET; and what it sends made valid Unicode, or
failed at once when it cannot be read. The server is `mcp_server.py --http-hostile`: the notes server
behind middleware that answers as no SDK server would.

Before, the cap counted the bytes as they came (a gzip bomb under it became a 64 MiB result, accepted),
the GET streams passed uncapped (one event that never ends grew the server to 3.4 GiB in 14 s), and an
answer the SDK could not parse (a lone surrogate, JSON cut short) left its call waiting for its
deadline, which ended the episode."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agent_env import Episode, EpisodeError, EpisodeState, ErrorCode, load_bundle
from tst.support.mcp_bundles import a_notes_task, http_notes_server, http_server, notes_bundle
from tst.support.mcp_server import DEFLATED, FLOOD_BYTES

pytestmark = pytest.mark.needs("mcp_installed")

_T = TypeVar("_T")
CAP = 100_000
CALL_S = 5.0


def played(url: str, root: Path, steps: Callable[[Episode], Awaitable[_T]]) -> _T:
    """An episode of a notes bundle on the server at `url` (`max_result_bytes` of CAP), deployed, played by
    `steps`, and torn down whatever happened."""
    task = a_notes_task(verifiers=[{"type": "reply", "contains": "done"}])
    server = http_server(url, max_result_bytes=CAP, call_timeout_s=CALL_S)
    episode = Episode(load_bundle(notes_bundle(root, server, tasks=[task])).task("train", 0))

    async def main() -> _T:
        try:
            await episode.deploy()
            return await steps(episode)
        finally:
            await episode.teardown()

    return asyncio.run(main())


async def refused(episode: Episode, tool: str) -> EpisodeError:
    with pytest.raises(EpisodeError) as caught:
        await episode.call_tool(tool, {})
    assert episode.state is EpisodeState.TURN_OPEN
    return caught.value


async def eventually_async(condition: Callable[[], Awaitable[bool]], within: float = CALL_S) -> bool:
    """Whether the async `condition` holds within `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await condition():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


OVER_CAP = (
    f"failed: MCP server 'notes' answered with a message over its max_result_bytes of {CAP} bytes, which was "
    "dropped unread: make the tool answer less, or raise [mcp.notes] max_result_bytes"
)


def test_a_gzip_bomb_under_max_result_bytes_is_counted_as_it_decompresses_and_a_resumed_answer_too(
    tmp_path: Path,
) -> None:
    with http_notes_server(hostile=True) as server:

        async def steps(episode: Episode) -> tuple[EpisodeError, EpisodeError, str]:
            bomb, resumed = await refused(episode, "bomb"), await refused(episode, "resumable")
            return bomb, resumed, await episode.call_tool("add_note", {"text": "milk"})

        bomb, resumed, after = played(server.url, tmp_path, steps)

    assert (bomb.code, bomb.message) == (ErrorCode.TOOL_ERROR, f"bomb {OVER_CAP}")
    assert (resumed.code, resumed.message) == (ErrorCode.TOOL_ERROR, f"resumable {OVER_CAP}")
    assert after == "noted: milk"


def test_an_answer_compressed_with_deflate_reads_as_it_is_and_one_in_an_encoding_not_asked_for_fails(
    tmp_path: Path,
) -> None:
    with http_notes_server(hostile=True) as server:

        async def steps(episode: Episode) -> tuple[str, EpisodeError]:
            return await episode.call_tool("deflated", {}), await refused(episode, "brotli")

        deflated, brotli = played(server.url, tmp_path, steps)

    assert deflated == DEFLATED
    assert (brotli.code, brotli.message) == (
        ErrorCode.TOOL_ERROR,
        "brotli failed: MCP server 'notes' answered with a body in the content encoding 'br', which was not "
        "asked for",
    )


def test_a_get_stream_s_event_over_max_result_bytes_closes_it_and_the_episode_plays_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with http_notes_server(hostile=True) as server:

        async def steps(episode: Episode) -> tuple[list[dict[str, Any]], str]:
            streams: list[dict[str, Any]] = []

            async def hung_up() -> bool:
                streams[:] = json.loads(await episode.call_tool("flood", {}))
                return bool(streams) and streams[0]["hung_up"]

            assert await eventually_async(hung_up)
            return streams, await episode.call_tool("add_note", {"text": "milk"})

        async def floods(episode: Episode) -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = json.loads(await episode.call_tool("flood", {}))
            return found

        with caplog.at_level(logging.WARNING, logger="agent_env.mcp"):
            streams, after = played(server.url, tmp_path, steps)
            ended = [flood for flood in played(server.url, tmp_path, floods) if flood["method"] == "DELETE"]

    first = streams[0]
    assert first["method"] == "GET" and not first["resumed"]
    assert first["sent"] < FLOOD_BYTES // 2  # what loopback's buffers hold, at most
    assert after == "noted: milk"
    assert [record.getMessage() for record in caplog.records if record.name == "agent_env.mcp"] == [
        f"MCP server 'notes' sent a message over its max_result_bytes of {CAP} bytes on its GET stream (the "
        "messages it starts, which answer no call): the stream was closed, the message dropped unread"
    ]
    assert ended and ended[0]["hung_up"] and ended[0]["sent"] < FLOOD_BYTES // 2  # the first session's DELETE


def test_an_answer_with_a_lone_surrogate_reads_as_u_fffd_and_one_cut_short_fails_its_call_at_once(
    tmp_path: Path,
) -> None:
    with http_notes_server(hostile=True) as server:

        async def steps(episode: Episode) -> tuple[str, EpisodeError, str]:
            surrogate, garbled = await episode.call_tool("surrogate", {}), await refused(episode, "garbled")
            return surrogate, garbled, await episode.call_tool("add_note", {"text": "milk"})

        surrogate, garbled, after = played(server.url, tmp_path, steps)

    assert surrogate == "a\ufffdb"
    assert garbled.code == ErrorCode.TOOL_ERROR
    assert garbled.message.startswith(
        "garbled failed: MCP server 'notes' sent what is not a JSON-RPC message (Invalid JSON: EOF while "
        "parsing a list at line 1 column "
    )
    assert after == "noted: milk"
