"""A server's warm pool of Docker sandboxes, and the containers dead servers left, against a real engine."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_env.openenv import AgentEnvAction, BackgroundServer, build_app
from agent_env.sandbox import DockerSandboxProvider, PoolStatus, SandboxConfig, WarmPool
from agent_env.sandbox._owner import PID_LABEL
from tst.integration._containers import sandbox_containers
from tst.support.cli_server import agent_env_serve
from tst.support.metrics import scrape
from tst.support.waiting import until
from tst.support.wharf import BASH_TASK, WHARF, play_reference

CLIENT_TIMEOUT_S = 30.0
FILL_S = 60.0

SERVER_THAT_DIES = """
import asyncio, sys, time
from agent_env.sandbox import DockerSandboxProvider, PoolStatus, SandboxConfig, WarmPool
sandbox = asyncio.run(DockerSandboxProvider(SandboxConfig(provider="docker", image=sys.argv[1])).create({}))
print(sandbox.id, flush=True)
time.sleep(300)
"""


def pool(server: BackgroundServer) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(f"{server.url}/wharf/status", timeout=10).json()
    assert answer["warm_pool"] is not None
    return dict(answer["warm_pool"])


def hostname_and_files(client: Any) -> list[str]:
    """The container's short id (its hostname) and what its work folder holds, from a bash call."""
    answer = client.step(AgentEnvAction.call_tool("bash", {"command": "hostname; ls"}).wire())
    assert answer.observation["error"] is None
    return list(answer.observation["result"].split()[:2])


def test_a_reset_gets_a_container_the_pool_started_ahead_with_the_task_s_files_and_each_serves_one_episode(
    connect: Any, docker_client: Any, sandbox_image: str
) -> None:
    server = BackgroundServer(build_app(WHARF, sandbox="docker", warm=2)).start()
    try:
        assert until(lambda: pool(server)["ready"] == 2, FILL_S)
        waiting = {c[:12] for c in sandbox_containers(docker_client)}
        client = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)

        client.reset(split="train", index=BASH_TASK, timeout_s=CLIENT_TIMEOUT_S)
        first = hostname_and_files(client)
        *_, scored = play_reference(client, "manifest-total-000")
        client.reset(split="train", index=BASH_TASK, timeout_s=CLIENT_TIMEOUT_S)
        second = hostname_and_files(client)

        assert first[0] in waiting and second[0] in waiting and first[0] != second[0]
        assert first[1] == second[1] == "manifest.csv"
        assert (scored.done, scored.reward) == (True, 1.0)
        assert until(lambda: pool(server)["ready"] == 2, FILL_S)
        assert pool(server)["handed_out"] == 2 and pool(server)["started_cold"] == 0
        samples = scrape(server.url)
        assert samples[("agent_env_warm_pool_ready", ())] == 2
        assert samples[("agent_env_warm_pool_handed_out_total", ())] == 2
        assert samples[("agent_env_live_sandboxes", ())] == 1  # the second episode's, still live
        assert first[0] not in {c[:12] for c in sandbox_containers(docker_client)}
    finally:
        server.stop()

    assert sandbox_containers(docker_client) == []


def test_a_pool_container_that_died_while_it_waited_is_replaced_never_handed_out(
    connect: Any, docker_client: Any, sandbox_image: str
) -> None:
    server = BackgroundServer(build_app(WHARF, sandbox="docker", warm=1)).start()
    try:
        assert until(lambda: pool(server)["ready"] == 1, FILL_S)
        (dead,) = sandbox_containers(docker_client)
        docker_client.api.kill(dead)
        client = connect(server.url, message_timeout_s=CLIENT_TIMEOUT_S)

        opened = client.reset(split="train", index=BASH_TASK, timeout_s=CLIENT_TIMEOUT_S)
        host, files = hostname_and_files(client)

        assert opened.observation["error"] is None
        assert host != dead[:12] and files == "manifest.csv"
        assert pool(server)["replaced"] == 1
        assert until(lambda: pool(server)["ready"] == 1, FILL_S)
    finally:
        server.stop()

    assert sandbox_containers(docker_client) == []


def test_a_server_killed_with_sigkill_leaves_its_containers_and_the_next_to_start_removes_them_saying_so(
    docker_client: Any, sandbox_image: str, caplog: pytest.LogCaptureFixture
) -> None:
    dying = subprocess.Popen(
        [sys.executable, "-c", SERVER_THAT_DIES, sandbox_image], stdout=subprocess.PIPE, text=True
    )
    settings = SandboxConfig(provider="docker", image=sandbox_image)
    provider = DockerSandboxProvider(settings, client=docker_client)

    async def keep_one_then_start() -> str:
        ours = await provider.create({})  # this process runs on: its container stays
        os.kill(dying.pid, signal.SIGKILL)
        dying.wait(CLIENT_TIMEOUT_S)
        assert docker_client.api.inspect_container(left)["Config"]["Labels"][PID_LABEL] == str(dying.pid)
        with caplog.at_level(logging.INFO, logger="agent_env.sandbox"):
            await provider.start()
        remaining = sandbox_containers(docker_client)
        await ours.teardown()
        await provider.close()
        assert remaining == [ours.id]
        return ours.id

    try:
        assert dying.stdout is not None
        left = dying.stdout.readline().strip()
        assert left in sandbox_containers(docker_client)
        asyncio.run(keep_one_then_start())
    finally:
        if dying.poll() is None:
            dying.kill()
            dying.wait()

    assert "removed 1 sandbox container(s) left by servers no longer running on this host" in caplog.text
    assert sandbox_containers(docker_client) == []


def test_a_pool_whose_containers_fail_to_start_tries_again_fills_and_never_holds_more_than_its_size(
    docker_client: Any, sandbox_image: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = DockerSandboxProvider(
        SandboxConfig(provider="docker", image=sandbox_image), client=docker_client
    )
    start = provider.started
    failures = [RuntimeError("the engine is busy"), RuntimeError("the engine is still busy")]

    async def failing_at_first() -> Any:
        if failures:
            raise failures.pop(0)
        return await start()

    async def play() -> tuple[Any, list[PoolStatus]]:
        pool = WarmPool(provider, 2)
        await pool.start()
        try:
            seen: list[PoolStatus] = []
            deadline = asyncio.get_running_loop().time() + FILL_S
            while asyncio.get_running_loop().time() < deadline:  # at every turn of the event loop
                seen.append(pool.status())
                if seen[-1].ready == 2:
                    break
                await asyncio.sleep(0)
            await asyncio.sleep(0.5)  # and no more than that
            seen.append(pool.status())
            warm = await pool.create({"a.txt": b"a"})
            read = await warm.run("cat a.txt", timeout_s=10, max_output_bytes=64)
            await warm.teardown()
            return read, seen
        finally:
            await pool.close()

    monkeypatch.setattr(provider, "started", failing_at_first)
    with caplog.at_level(logging.WARNING, logger="agent_env.sandbox"):
        read, seen = asyncio.run(play())

    assert read.output == "a"
    assert seen[-1].ready == 2
    assert all(s.ready + s.starting <= 2 for s in seen)
    assert caplog.text.count("warm pool: a container failed to start") == 2
    assert sandbox_containers(docker_client) == []


def test_agent_env_serve_killed_with_sigkill_leaves_its_pool_and_the_next_to_start_removes_it_saying_how_many(
    docker_client: Any, sandbox_image: str, tmp_path: Path
) -> None:
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    with agent_env_serve(WHARF, "--sandbox", "docker", "--warm", "2", log=first_log, tmpdir=tmp_path) as (
        first,
        _,
    ):
        assert until(lambda: len(sandbox_containers(docker_client)) == 2, FILL_S)
        first.kill()
        first.wait(CLIENT_TIMEOUT_S)
        left = sandbox_containers(docker_client)
    with agent_env_serve(WHARF, "--sandbox", "docker", log=second_log, tmpdir=tmp_path):
        removed = until(lambda: sandbox_containers(docker_client) == [], CLIENT_TIMEOUT_S)

    assert len(left) == 2
    assert removed
    assert (
        "removed 2 sandbox container(s) left by servers no longer running on this host"
        in second_log.read_text()
    )
