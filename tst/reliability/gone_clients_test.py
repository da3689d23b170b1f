"""Clients that stop reading and go away cost the server a log line each, never a traceback.

A client that never reads answers no ping either, so uvicorn closes its side once the ping times out;
an answer sent after that used to fail, and OpenEnv's handler, answering that failure, sent again
and died: a full `Exception in ASGI application` traceback per client (64 of them for 64 such
sessions). The server here is uvicorn on loopback with its pings shortened to a second, so the
clients' sessions reach that point within seconds; they keep sending, never read, then go away.
Whether an answer is sent after the close is a race, so rounds of clients run until one is.
"""

from __future__ import annotations

import logging
import re
import time

import pytest

from agent_env.openenv import BackgroundServer, build_served_app
from agent_env.testing import fake_served
from tst.reliability._raw import dock, status
from tst.reliability._sockets import NeverReads
from tst.support.waiting import until

CLIENTS = 8
SENDING_S = 4.0
"""How long the clients send without reading: several missed pings' worth."""
RELEASED_S = 30.0
ROUNDS = 4


def stall_and_go(server: BackgroundServer) -> None:
    """`CLIENTS` clients send without reading for `SENDING_S`, then go away; the server releases them."""
    clients = [NeverReads(server.port) for _ in range(CLIENTS)]
    until_sent = time.monotonic() + SENDING_S
    while time.monotonic() < until_sent:
        for client in clients:
            client.ask_for_state()
    for client in clients:
        client.go_away()
    released = until(
        lambda: (status(server)["connections"], status(server)["live_episodes"]) == (0, 0), RELEASED_S
    )
    assert released, status(server)


def test_clients_that_never_read_and_go_away_are_a_log_line_each_never_a_traceback_and_release_everything(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    app = build_served_app(fake_served({"train": [dock("store")]}))
    with BackgroundServer(app, ws_ping_interval=1.0, ws_ping_timeout=1.0) as server:
        for _ in range(ROUNDS):  # an answer sent after the ping's close is a race: a round may miss it
            stall_and_go(server)
            if "went away" in caplog.text or "Exception in ASGI application" in caplog.text:
                break

    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert not any(record.exc_info for record in caplog.records), logged
    assert "Exception in ASGI application" not in logged, logged
    gone = re.findall(r"WebSocket client (\S+) went away", logged)
    assert gone, f"no client's answer failed in {ROUNDS} rounds: the test did not reach its case\n{logged}"
    assert len(gone) == len(set(gone)), gone
