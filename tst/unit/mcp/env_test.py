"""MCP envs played through episodes: a real MCP server (`tst/support/mcp_server.py`, written with the
SDK) over stdio, started per episode, and over streamable HTTP on loopback, shared; and every way it can
fail: a crash mid-episode, a hang at start, an exit at start, a malformed schema, a call that never
answers. Each failure names the server, and leaves nothing running."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from agent_env import Episode, EpisodeError, EpisodeState, ErrorCode, load_bundle
from agent_env.mcp import McpToolError
from agent_env.openenv import AgentEnvAction, build_app
from tst.support.mcp_bundles import (
    SERVER,
    a_notes_task,
    http_notes_server,
    http_server,
    notes_bundle,
    stdio_server,
)
from tst.support.mcp_server import CRASH_MESSAGE
from tst.support.serving import Connect, Serve
from tst.support.waiting import WAIT_S, alive, running, until

pytestmark = pytest.mark.needs("mcp_installed", "openenv_installed")

_T = TypeVar("_T")


def played(episode: Episode, steps: Callable[[Episode], Awaitable[_T]]) -> _T:
    """Deploy `episode`, run `steps` on it, and tear it down whatever happened."""

    async def main() -> _T:
        try:
            await episode.deploy()
            return await steps(episode)
        finally:
            await episode.teardown()

    return asyncio.run(main())


def episode_of(root: Path, index: int = 0) -> Episode:
    return Episode(load_bundle(root).task("train", index))


def deploy_error(root: Path) -> EpisodeError:
    episode = episode_of(root)

    async def main() -> None:
        try:
            await episode.deploy()
        finally:
            await episode.teardown()

    with pytest.raises(EpisodeError) as caught:
        asyncio.run(main())
    return caught.value


def test_a_stdio_server_s_tools_are_offered_and_called_with_their_results_as_text(tmp_path: Path) -> None:
    episode = episode_of(notes_bundle(tmp_path, stdio_server()))

    async def steps(episode: Episode) -> list[str]:
        return [
            await episode.call_tool("add_note", {"text": "milk"}),
            await episode.call_tool("add_note", {"text": "eggs"}),
            await episode.call_tool("list_notes", {}),
        ]

    answers = played(episode, steps)

    assert answers == ["noted: milk", "noted: eggs", '["milk", "eggs"]']
    names = [tool["function"]["name"] for tool in episode.tools]
    assert names == [
        "add_note",
        "list_notes",
        "fail",
        "crash",
        "hang",
        "start_helper",
        "orphan_and_hang",
        "big",
        "where",
        "session",
    ]
    add_note = episode.tools[0]["function"]
    assert add_note == {
        "name": "add_note",
        "description": "Add a note.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The note's text."}},
            "required": ["text"],
        },
    }
    assert episode.tool_timeouts["add_note"] == 31.0  # call_timeout_s (30) + CALL_MARGIN_S


def test_an_argument_the_schema_refuses_is_invalid_and_a_failing_tool_a_tool_error_the_turn_survives(
    tmp_path: Path,
) -> None:
    episode = episode_of(notes_bundle(tmp_path, stdio_server()))

    async def steps(episode: Episode) -> list[EpisodeError]:
        errors = []
        for tool, arguments in [
            ("add_note", {"text": 3}),
            ("add_note", {}),
            ("fail", {"reason": "disk full"}),
        ]:
            with pytest.raises(EpisodeError) as caught:
                await episode.call_tool(tool, arguments)
            errors.append(caught.value)
        assert episode.state is EpisodeState.TURN_OPEN
        assert await episode.call_tool("add_note", {"text": "milk"}) == "noted: milk"
        return errors

    wrong_type, missing, failed = played(episode, steps)

    assert wrong_type.code == ErrorCode.INVALID_ARGUMENTS
    assert wrong_type.message == "add_note: argument 'text': 3 is not of type 'string' (arguments: text)"
    assert missing.code == ErrorCode.INVALID_ARGUMENTS
    assert "'text' is a required property" in missing.message
    assert failed.code == ErrorCode.TOOL_ERROR
    assert failed.message.startswith("fail failed:") and "disk full" in failed.message


def test_a_stdio_server_works_in_the_episode_s_sandbox_folder_and_gets_the_task_s_seed(
    tmp_path: Path,
) -> None:
    task = a_notes_task(
        files={"shopping.txt": "milk\n"},
        seed={"notes": {"notes": ["bread"]}},
        verifiers=[{"type": "items", "env": "notes", "tool": "list_notes", "expected": ["bread"]}],
    )
    root = notes_bundle(tmp_path, stdio_server(), tasks=[task], agent='envs = ["notes"]\nbash = true')
    episode = episode_of(root)

    async def steps(episode: Episode) -> tuple[dict[str, Any], str, str]:
        where = json.loads(await episode.call_tool("where", {}))
        listed = await episode.call_tool("bash", {"command": "cat shopping.txt"})
        return where, listed, await episode.call_tool("list_notes", {})

    where, listed, notes = played(episode, steps)

    assert where["files"] == ["shopping.txt"]
    assert listed.startswith("milk")
    assert notes == '["bread"]'
    assert not Path(where["cwd"]).exists()  # the sandbox's folder, removed at teardown


def test_without_a_sandbox_a_stdio_server_works_in_a_folder_of_its_own_that_teardown_removes(
    tmp_path: Path,
) -> None:
    episode = episode_of(notes_bundle(tmp_path, stdio_server()))

    async def steps(episode: Episode) -> dict[str, Any]:
        where: dict[str, Any] = json.loads(await episode.call_tool("where", {}))
        return where

    where = played(episode, steps)

    assert Path(where["cwd"]).name.startswith("agent-env-mcp-notes-")
    assert not Path(where["cwd"]).exists()
    assert until(lambda: not alive(where["pid"]))


def test_teardown_stops_the_server_with_every_process_it_started(tmp_path: Path) -> None:
    episode = episode_of(notes_bundle(tmp_path, stdio_server()))

    async def steps(episode: Episode) -> tuple[int, int]:
        helper = int(await episode.call_tool("start_helper", {}))
        server = json.loads(await episode.call_tool("where", {}))["pid"]
        assert alive(helper) and alive(server)
        return helper, server

    helper, server = played(episode, steps)

    assert until(lambda: not alive(helper) and not alive(server))


def test_a_process_the_server_starts_in_a_session_of_its_own_is_killed_once_a_call_past_its_deadline_ends_it(
    tmp_path: Path,
) -> None:
    marker = f"300.{uuid.uuid4().int % 10**9}"  # sleep's argument: how its process is found
    episode = episode_of(notes_bundle(tmp_path, stdio_server(call_timeout_s=1)))

    async def steps(episode: Episode) -> EpisodeError:
        with pytest.raises(EpisodeError) as caught:
            await episode.call_tool("orphan_and_hang", {"marker": marker})
        return caught.value

    try:
        error = played(episode, steps)

        assert error.code == ErrorCode.DEADLINE_EXCEEDED
        assert until(lambda: running(marker) == [])
    finally:
        for leftover in running(marker):
            os.kill(leftover, signal.SIGKILL)


def test_an_answer_over_max_result_bytes_is_a_tool_error_within_the_call_s_deadline_and_the_server_plays_on(
    tmp_path: Path,
) -> None:
    episode = episode_of(notes_bundle(tmp_path, stdio_server(call_timeout_s=10, max_result_bytes=100_000)))

    async def steps(episode: Episode) -> tuple[EpisodeError, float, str]:
        began = time.monotonic()
        with pytest.raises(EpisodeError) as caught:
            await episode.call_tool("big", {"megabytes": 30})
        took = time.monotonic() - began
        assert episode.state is EpisodeState.TURN_OPEN
        return caught.value, took, await episode.call_tool("add_note", {"text": "milk"})

    error, took, after = played(episode, steps)

    assert error.code == ErrorCode.TOOL_ERROR
    assert error.message == (
        "big failed: MCP server 'notes' answered with a message over its max_result_bytes of 100000 bytes, "
        "which was dropped unread: make the tool answer less, or raise [mcp.notes] max_result_bytes"
    )
    assert took < 10
    assert after == "noted: milk"


def test_while_a_stdio_server_answers_30_mb_the_served_status_and_another_session_answer_at_once(
    tmp_path: Path, serve: Serve, connect: Connect
) -> None:
    server = serve(build_app(notes_bundle(tmp_path / "notes", stdio_server(call_timeout_s=20))))
    big_one, other = connect(server.url, message_timeout_s=60), connect(server.url, message_timeout_s=60)
    big_one.reset(split="train", index=0)
    other.reset(split="train", index=0)
    answered: dict[str, Any] = {}
    called = tmp_path / "called"

    def call_big() -> None:
        arguments = {"megabytes": 30, "touch": str(called)}
        answered["big"] = big_one.step(AgentEnvAction.call_tool("big", arguments).wire())
        answered["big_at"] = time.monotonic()

    caller = threading.Thread(target=call_big)
    caller.start()
    try:
        assert until(called.exists)
        status = httpx.get(f"{server.url}/notes/status", timeout=WAIT_S)
        noted = other.step(AgentEnvAction.call_tool("add_note", {"text": "milk"}).wire())
        other_at = time.monotonic()
    finally:
        caller.join(30)

    assert status.status_code == 200
    assert noted.observation["result"] == "noted: milk"
    assert "big" in answered and other_at < answered["big_at"]
    assert answered["big"].observation["error"]["code"] == ErrorCode.TOOL_ERROR
    assert "max_result_bytes of 1048576 bytes" in answered["big"].observation["error"]["message"]


def test_a_server_that_crashes_mid_episode_ends_it_naming_the_server_its_exit_and_its_stderr(
    tmp_path: Path,
) -> None:
    episode = episode_of(notes_bundle(tmp_path, stdio_server()))

    async def steps(episode: Episode) -> tuple[EpisodeError, int]:
        server = json.loads(await episode.call_tool("where", {}))["pid"]
        with pytest.raises(EpisodeError) as caught:
            await episode.call_tool("crash", {})
        return caught.value, server

    crashed, server = played(episode, steps)

    assert crashed.code == ErrorCode.ENV_FAILED
    assert crashed.message.startswith(f"MCP server 'notes' (stdio: {sys.executable} {SERVER})")
    assert "stopped during crash (exited with code 3; its stderr ended: " + CRASH_MESSAGE in crashed.message
    assert episode.state is EpisodeState.TORN_DOWN
    assert episode.outcome is not None and episode.outcome.kind == "failed"
    assert episode.outcome.code == ErrorCode.ENV_FAILED
    assert not alive(server)


def test_a_server_that_hangs_at_start_fails_the_deploy_at_its_start_timeout_and_is_killed(
    tmp_path: Path,
) -> None:
    root = notes_bundle(tmp_path, stdio_server("--hang-at-start", start_timeout_s=1))

    error = deploy_error(root)

    assert error.code == ErrorCode.DEPLOY_FAILED
    assert "MCP server 'notes'" in error.message
    assert "did not start within its start_timeout_s of 1 s" in error.message
    assert "raise [mcp.notes] start_timeout_s" in error.message
    assert until(lambda: running("--hang-at-start") == [])


def test_a_server_that_exits_at_start_fails_the_deploy_with_its_exit_code_and_stderr(tmp_path: Path) -> None:
    error = deploy_error(notes_bundle(tmp_path, stdio_server("--exit-at-start")))

    assert error.code == ErrorCode.DEPLOY_FAILED
    assert "MCP server 'notes'" in error.message
    assert (
        "failed to start (exited with code 2; its stderr ended: cannot open the notes store)" in error.message
    )


def test_a_command_that_does_not_exist_fails_the_deploy_saying_so(tmp_path: Path) -> None:
    error = deploy_error(notes_bundle(tmp_path, '[mcp.notes]\ncommand = "no-such-mcp-server"\n'))

    assert error.code == ErrorCode.DEPLOY_FAILED
    assert error.message.startswith("MCP server 'notes' (stdio: no-such-mcp-server) could not start:")
    assert "No such file or directory" in error.message


def test_a_server_that_lists_a_malformed_input_schema_fails_the_deploy_naming_the_tool(
    tmp_path: Path,
) -> None:
    error = deploy_error(notes_bundle(tmp_path, stdio_server("--malformed")))

    assert error.code == ErrorCode.DEPLOY_FAILED
    assert "MCP server 'notes'" in error.message
    assert "tool 'add_note' lists a malformed input schema" in error.message
    assert "'strang' is not valid" in error.message
    assert until(lambda: running("--malformed") == [])


def test_a_call_past_the_server_s_call_timeout_ends_the_episode_naming_the_setting(tmp_path: Path) -> None:
    episode = episode_of(notes_bundle(tmp_path, stdio_server(call_timeout_s=0.5)))

    async def steps(episode: Episode) -> EpisodeError:
        with pytest.raises(EpisodeError) as caught:
            await episode.call_tool("hang", {})
        return caught.value

    error = played(episode, steps)

    assert error.code == ErrorCode.DEADLINE_EXCEEDED
    assert "did not answer hang within its call_timeout_s of 0.5 s" in error.message
    assert "raise [mcp.notes] call_timeout_s" in error.message
    assert episode.outcome is not None and episode.outcome.code == ErrorCode.DEADLINE_EXCEEDED
    assert episode.tool_timeout_source("hang") == (
        "MCP server 'notes''s: raise [mcp.notes] call_timeout_s to give it longer"
    )


def test_a_tool_name_no_trainer_can_call_fails_the_deploy_until_rename_maps_it(tmp_path: Path) -> None:
    refused = deploy_error(notes_bundle(tmp_path / "as-listed", stdio_server("--dashed")))
    renamed = episode_of(
        notes_bundle(tmp_path / "renamed", stdio_server("--dashed", rename={"count-notes": "count_notes"}))
    )

    async def steps(episode: Episode) -> str:
        await episode.call_tool("add_note", {"text": "milk"})
        return await episode.call_tool("count_notes", {})

    assert refused.code == ErrorCode.DEPLOY_FAILED
    assert "tool 'count-notes' is not a name a trainer can call" in refused.message
    assert 'rename = {"count-notes" = ...}' in refused.message
    assert played(renamed, steps) == "1"


def test_roles_and_access_changes_limit_a_server_s_tools_like_any_env_s(tmp_path: Path) -> None:
    tasks = [
        a_notes_task(id="plain"),
        a_notes_task(id="allowed", modify_env_tool_access=[{"action": "enable", "tools": ["crash"]}]),
        a_notes_task(id="refused", modify_env_tool_access=[{"action": "disable", "tools": ["fail"]}]),
    ]
    root = notes_bundle(tmp_path, stdio_server(roles={"crash": ["admin"]}), tasks=tasks)
    bundle = load_bundle(root)

    def names(index: int) -> list[str]:
        episode = Episode(bundle.task("train", index))

        async def steps(episode: Episode) -> list[str]:
            return [tool["function"]["name"] for tool in episode.tools]

        return played(episode, steps)

    assert "crash" not in names(0)
    assert "crash" in names(1)
    assert "fail" not in names(2) and "crash" not in names(2)


def test_an_access_change_naming_a_tool_the_server_does_not_list_fails_the_deploy(tmp_path: Path) -> None:
    task = a_notes_task(modify_env_tool_access=[{"action": "disable", "tools": ["erase_notes"]}])

    error = deploy_error(notes_bundle(tmp_path, stdio_server(), tasks=[task]))

    assert error.code == ErrorCode.DEPLOY_FAILED
    assert "modify_env_tool_access names tool 'erase_notes', which no env of notes has" in error.message


def test_verifiers_read_a_server_through_its_tools_from_items_and_from_sync_and_async_functions(
    tmp_path: Path,
) -> None:
    verifiers = """
        def noted(context, text):
            return text in context.envs["notes"].call("list_notes")

        async def counted(context, count):
            return len(await context.envs["notes"].acall("list_notes")) == count

        async def blocking(context):
            return context.envs["notes"].call("list_notes")
    """
    task = a_notes_task(
        verifiers=[
            {"type": "items", "env": "notes", "tool": "list_notes", "expected": ["milk"]},
            {"type": "function", "function": "noted", "args": {"text": "milk"}},
            {"type": "function", "function": "counted", "args": {"count": 1}},
        ]
    )
    wrong = a_notes_task(id="wrong", verifiers=[{"type": "function", "function": "blocking"}])
    root = notes_bundle(tmp_path, stdio_server(), tasks=[task, wrong], verifiers=verifiers)

    async def steps(episode: Episode) -> Any:
        await episode.call_tool("add_note", {"text": "milk"})
        return await episode.end_turn("Noted.")

    scored = played(episode_of(root), steps)
    with pytest.raises(EpisodeError) as blocked:
        played(episode_of(root, 1), steps)

    assert scored.done and scored.score == 1.0 and scored.verifier_scores == (1.0, 1.0, 1.0)
    assert blocked.value.code == ErrorCode.VERIFIER_FAILED
    assert "in an async function, await context.envs['notes'].acall(...) instead" in blocked.value.message


def test_a_tool_a_verifier_calls_that_answers_an_error_fails_the_verifier_saying_so(tmp_path: Path) -> None:
    verifiers = """
        def failing(context):
            return context.envs["notes"].call("fail", {"reason": "store offline"})
    """
    task = a_notes_task(verifiers=[{"type": "function", "function": "failing"}])
    episode = episode_of(notes_bundle(tmp_path, stdio_server(), tasks=[task], verifiers=verifiers))

    async def steps(episode: Episode) -> Any:
        return await episode.end_turn("Done.")

    with pytest.raises(EpisodeError) as caught:
        played(episode, steps)

    assert caught.value.code == ErrorCode.VERIFIER_FAILED
    assert McpToolError.__name__ in caught.value.message
    assert "tool 'fail' of MCP server 'notes' failed" in caught.value.message
    assert "store offline" in caught.value.message


def test_a_url_server_is_shared_by_episodes_each_with_its_own_session(tmp_path: Path) -> None:
    with http_notes_server() as server:
        bundle = load_bundle(notes_bundle(tmp_path, http_server(server.url)))

        async def main() -> list[Any]:
            first, second = Episode(bundle.task("train", 0)), Episode(bundle.task("train", 0))
            try:
                await asyncio.gather(first.deploy(), second.deploy())
                await first.call_tool("add_note", {"text": "milk"})
                await second.call_tool("add_note", {"text": "eggs"})
                sessions = {await first.call_tool("session", {}), await second.call_tool("session", {})}
                return [
                    await first.call_tool("list_notes", {}),
                    (await second.end_turn("Done.")).score,
                    sessions,
                ]
            finally:
                await asyncio.gather(first.teardown(), second.teardown())

        listed, score, sessions = asyncio.run(main())

    assert len(sessions) == 2
    assert listed == '["milk", "eggs"]'  # one server: its notes are every episode's
    assert score == 0.0  # the second episode's verifier reads the shared list, not ["milk"]


def test_a_url_server_that_dies_mid_episode_ends_it_naming_the_server_and_why(tmp_path: Path) -> None:
    with http_notes_server() as server:
        episode = episode_of(notes_bundle(tmp_path, http_server(server.url)))

        async def steps(episode: Episode) -> EpisodeError:
            assert await episode.call_tool("add_note", {"text": "milk"}) == "noted: milk"
            server.kill()
            with pytest.raises(EpisodeError) as caught:
                await episode.call_tool("add_note", {"text": "eggs"})
            return caught.value

        error = played(episode, steps)

    assert error.code == ErrorCode.ENV_FAILED
    assert error.message.startswith(
        f"MCP server 'notes' (streamable HTTP: {server.url}) stopped during add_note"
    )
    assert "ConnectError" in error.message
    assert episode.state is EpisodeState.TORN_DOWN


def test_a_url_server_s_answer_over_max_result_bytes_is_a_tool_error_and_its_session_plays_on(
    tmp_path: Path,
) -> None:
    with http_notes_server() as server:
        episode = episode_of(notes_bundle(tmp_path, http_server(server.url, max_result_bytes=100_000)))

        async def steps(episode: Episode) -> tuple[EpisodeError, str]:
            with pytest.raises(EpisodeError) as caught:
                await episode.call_tool("big", {"megabytes": 30})
            assert episode.state is EpisodeState.TURN_OPEN
            return caught.value, await episode.call_tool("add_note", {"text": "milk"})

        error, after = played(episode, steps)

    assert error.code == ErrorCode.TOOL_ERROR
    assert "answered with a message over its max_result_bytes of 100000 bytes" in error.message
    assert after == "noted: milk"


def test_a_url_nobody_answers_at_fails_the_deploy_saying_so(tmp_path: Path) -> None:
    with http_notes_server() as server:
        url = server.url
    error = deploy_error(notes_bundle(tmp_path, http_server(url, start_timeout_s=WAIT_S)))

    assert error.code == ErrorCode.DEPLOY_FAILED
    assert error.message.startswith(f"MCP server 'notes' (streamable HTTP: {url}) failed to start")
    assert "ConnectError" in error.message
