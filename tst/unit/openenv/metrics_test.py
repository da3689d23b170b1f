"""`GET /metrics`, scraped as Prometheus does, during a run: it agrees with `/status` and the episode log."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_env.openenv import BackgroundServer, build_app
from tst.support.metrics import scrape
from tst.support.serving import Connect, Serve
from tst.support.waiting import until
from tst.support.wharf import (
    SINGLE_TURN_TASK,
    TWO_TURN_TASK,
    WHARF,
    play_reference,
    reference_play,
    wharf_with_a_broken_task,
)

pytestmark = pytest.mark.needs("openenv_installed")

PLAYED = [(SINGLE_TURN_TASK, "store-crate-000"), (TWO_TURN_TASK, "store-then-move-000")] * 2
EPISODE_LINE = re.compile(r"episode train/\d+ \S+ \[\S+\]: (scored|failed|abandoned)\S* .*after (\d+) calls?")


def status(server: BackgroundServer) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(f"{server.url}/wharf/status", timeout=10).json()
    return answer


def test_a_scrape_during_a_run_agrees_with_the_status_and_with_the_episode_log(
    serve: Serve, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(build_app(WHARF, max_concurrent_envs=4))
    with caplog.at_level(logging.INFO, logger="agent_env.openenv"):
        player, holder = connect(server.url), connect(server.url)
        for index, task_id in PLAYED:
            player.reset(split="train", index=index)
            scored = play_reference(player, task_id)[-1]
            assert scored.done and scored.reward == 1.0
        holder.reset(split="train", index=SINGLE_TURN_TASK)  # one episode live while scraped
        player.reset(split="train", index=SINGLE_TURN_TASK)
        player.step({"kind": "call_tool", "tool": "store_crate", "arguments": {"crate": "C1", "bay": 99}})
        player.step({"kind": "call_tool", "tool": "no_such_tool", "arguments": {}})
        player.close()  # its episode abandoned: gone with its connection
        assert until(lambda: status(server)["live_episodes"] == 1, 10)
        now, samples = status(server), scrape(server.url)
    lines = [EPISODE_LINE.search(record.getMessage()) for record in caplog.records]
    logged = [line for line in lines if line is not None]

    assert samples[("agent_env_live_episodes", ())] == now["live_episodes"] == 1
    assert samples[("agent_env_connections", ())] == now["connections"] == 1
    assert samples[("agent_env_sessions", (("kind", "websocket"),))] == now["sessions"]["websocket"] == 1
    assert samples[("agent_env_sessions", (("kind", "without_client"),))] == 0
    assert samples[("agent_env_teardowns_in_flight", ())] == now["tearing_down"] == 0
    assert samples[("agent_env_max_concurrent_envs", ())] == 4
    assert samples[("agent_env_live_sandboxes", ())] == now["live_sandboxes"] == 0
    assert [line.group(1) for line in logged] == ["scored"] * len(PLAYED) + ["abandoned"]
    assert samples[("agent_env_episodes_total", (("code", ""), ("outcome", "scored")))] == len(PLAYED)
    assert samples[("agent_env_episodes_total", (("code", ""), ("outcome", "abandoned")))] == 1
    calls = {
        labels: value for (name, labels), value in samples.items() if name == "agent_env_tool_calls_total"
    }
    played = [reference_play(task_id) for _, task_id in PLAYED]
    tool_calls = sum(len(turn.all_calls) for play in played for turn in play.turns) + 2
    turns_ended = sum(len(play.turns) for play in played)
    assert sum(calls.values()) == tool_calls == sum(int(line.group(2)) for line in logged) - turns_ended
    assert calls[(("outcome", "UNKNOWN_TOOL"), ("tool", "no_such_tool"))] == 1
    assert samples[("agent_env_deploy_seconds_count", ())] == len(PLAYED) + 1
    assert samples[("agent_env_verify_seconds_count", ())] == len(PLAYED)
    assert samples[("agent_env_teardown_seconds_count", ())] == len(PLAYED) + 1
    assert sum(v for (n, _), v in samples.items() if n == "agent_env_tool_call_seconds_count") == sum(
        calls.values()
    )
    assert ("agent_env_warm_pool_ready", ()) not in samples


def test_two_servers_in_one_process_keep_figures_of_their_own(serve: Serve, connect: Connect) -> None:
    busy, idle = serve(build_app(WHARF)), serve(build_app(WHARF))
    client = connect(busy.url)
    client.reset(split="train", index=SINGLE_TURN_TASK)
    play_reference(client, "store-crate-000")
    assert until(lambda: status(busy)["live_episodes"] == 0, 10)

    assert scrape(busy.url)[("agent_env_episodes_total", (("code", ""), ("outcome", "scored")))] == 1
    assert not [key for key in scrape(idle.url) if key[0] == "agent_env_episodes_total"]


def test_a_server_built_skipping_broken_tasks_logs_each_one_and_counts_them_and_one_that_skipped_none_says_0(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bundle = wharf_with_a_broken_task(tmp_path / "wharf")
    with caplog.at_level(logging.WARNING, logger="agent_env.openenv"):
        skipping = serve(build_app(bundle, skip_broken_tasks=True))
    whole = serve(build_app(WHARF))

    [logged] = [record.getMessage() for record in caplog.records]
    assert logged.startswith(
        "skipped 1 of 3 tasks:\n  tasks/train.jsonl:3 (task 'stray-000'): agent 'stowaway'"
    )
    assert scrape(skipping.url)[("agent_env_tasks_skipped", ())] == 1
    assert scrape(whole.url)[("agent_env_tasks_skipped", ())] == 0
