"""Clients that send and never read lose their sessions within a bound, and all they held with them.

A client with a 4 KB receive buffer that sent `list_tools` frames without reading kept its
connection, session, episode and sandbox for as long as it liked: once its socket was full, the
server's answer waited for it to read, and so did the session's handler; uvicorn's close on a missed
ping waits for the same answers to be read. Such clients filled a server for good. Now an answer the
client's socket does not take within `ConnectionLimits.send_timeout_s` (1 s here, 30 s by default)
closes the connection: the session ends, its episode is torn down, `/status` counts it gone, and a
new client plays. The server's capacity here is the clients' number, so they fill it first.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_env.openenv import BackgroundServer, ConnectionLimits, build_served_app
from agent_env.testing import fake_served
from tst.reliability._raw import Raw, dock, observation, play_on, status
from tst.reliability._sockets import NeverReads
from tst.support.waiting import until

CAPACITY = 4
LIMITS = ConnectionLimits(per_client=16, total=64, send_timeout_s=1.0)
FULL_S = 1.0
"""How long the server must have taken no frame for a client's socket to count as full."""
SENDING_S = 30.0
"""A bound on sending until the server takes no more frames."""
RELEASED_S = 30.0
"""A bound on everything the clients held being released: `send_timeout_s`, and time to spare."""
LIST_TOOLS = {"type": "step", "data": {"kind": "list_tools"}}


def send_until_full(client: NeverReads) -> None:
    """Send `list_tools` frames until the server has taken none for `FULL_S` (it waits on the
    client's full socket, or has closed it)."""
    deadline = time.monotonic() + SENDING_S
    last_taken = time.monotonic()
    while time.monotonic() - last_taken < FULL_S:
        assert time.monotonic() < deadline, f"the server still took frames after {SENDING_S:g} s"
        if client.send(LIST_TOOLS):
            last_taken = time.monotonic()


def idle(server: BackgroundServer) -> bool:
    now = status(server)
    return (now["connections"], now["live_episodes"], now["sessions"]["held"]) == (0, 0, 0)


def test_clients_that_send_and_never_read_lose_their_sessions_within_the_bound_and_a_new_client_plays(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="agent_env.openenv")
    app = build_served_app(fake_served({"train": [dock("store")]}), max_concurrent_envs=CAPACITY)
    with BackgroundServer(app, limits=LIMITS) as server:
        clients = [NeverReads(server.port) for _ in range(CAPACITY)]
        assert until(lambda: status(server)["live_episodes"] == CAPACITY, RELEASED_S), status(server)
        turned_away = Raw(server.url)
        refusal = turned_away.answer()
        turned_away.close()

        with ThreadPoolExecutor(CAPACITY) as senders:
            list(senders.map(send_until_full, clients))
        released = until(lambda: idle(server), RELEASED_S)
        after = status(server)
        raw = Raw(server.url)
        try:
            started = observation(raw.ask("reset", {"split": "train", "index": 0}))
            scored = play_on(raw)
        finally:
            raw.close()
            for client in clients:
                client.go_away()

    assert refusal["type"] == "error" and refusal["data"]["code"] == "CAPACITY_REACHED", refusal
    assert released, after
    assert after["live_sandboxes"] == 0 and after["tearing_down"] == 0
    assert started["observation"]["error"] is None
    assert (scored["done"], scored["reward"]) == (True, 1.0)
    assert server.guard.floods.counts() == {"connections closed with answers unread": CAPACITY}
    closes = [
        record.getMessage()
        for record in caplog.records
        if "took none of the server's answer" in record.getMessage()
    ]
    assert len(closes) == 1, closes
    assert closes[0].startswith(
        "closed a connection from 127.0.0.1: its socket took none of the server's answer for 1 s"
    )
    assert not any(record.exc_info for record in caplog.records)
