"""Clients that open connections and send half a request cannot take the server's descriptors.

10,000 connections that had each sent half a request header (slowloris) took every descriptor of
`agent-env serve`: `/health` and new WebSockets failed, and asyncio logged every failed accept, with
its traceback (239 MB a minute). Now a client holds at most `ConnectionLimits.per_client`
connections, and the server `total`, below its descriptor limit; one more is refused at once with
429 (or 503), and a request that does not arrive whole within `request_timeout_s` has its connection
closed. Refusals and closes are logged as a line, then a count. The clients here come from distinct
loopback addresses (127.0.0.2, ...), the server's own checks from 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import logging
import resource
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from agent_env.openenv import BackgroundServer, ConnectionLimits, build_served_app
from agent_env.testing import fake_served
from tst.reliability._raw import Raw, dock, observation, play_on
from tst.reliability._sockets import half_request, until_closed
from tst.support.cli_server import agent_env_serve
from tst.support.serving import Connect
from tst.support.wharf import SINGLE_TURN_TASK, WHARF, play_reference

ANSWER_S = 10.0
LIMITS = ConnectionLimits(per_client=4, total=64, request_timeout_s=2.0)
PEERS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
EACH = 10
"""Half requests from each peer: more than `LIMITS.per_client`."""
CLOSED_S = LIMITS.request_timeout_s + ANSWER_S
"""A bound on a held half request's close: its timeout, and time for a loaded machine."""

DESCRIPTORS = 512
"""The descriptor limit of the `agent-env serve` flooded past it: 600 connections took them all."""
FLOOD_PEERS = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
FLOOD_EACH = 150
FLOOD_CLOSED_S = 5.0 + ANSWER_S
"""A bound on a held half request's close: the default request timeout (5 s), and time to spare."""
OPENING_S = 30.0
"""A bound on opening a flood's connections."""


def opened(port: int, peers: tuple[str, ...], each: int) -> list[socket.socket]:
    """`each` half requests from every peer, in turn, for `OPENING_S` at most; a connection the server
    does not take (its backlog full) is left out."""
    sockets = []
    deadline = time.monotonic() + OPENING_S
    for _ in range(each):
        for peer in peers:
            if time.monotonic() > deadline:
                return sockets
            with contextlib.suppress(OSError):
                sockets.append(half_request(port, peer))
    return sockets


def the_server_answers(url: str, env_name: str, play: Callable[[], float | None]) -> None:
    """`/health` and the Task API answer, and a fresh WebSocket session plays a task to its score."""
    assert httpx.get(f"{url}/health", timeout=ANSWER_S).status_code == 200
    counted = httpx.post(f"{url}/{env_name}/num_tasks", json={"split": "train"}, timeout=ANSWER_S)
    assert counted.status_code == 200, counted.text
    assert play() == 1.0


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    app = build_served_app(fake_served({"train": [dock("store")]}))
    with BackgroundServer(app, limits=LIMITS) as served:
        yield served


def test_half_requests_past_a_clients_bound_are_refused_at_once_and_the_rest_closed_within_the_timeout(
    server: BackgroundServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agent_env.openenv")
    sockets = opened(server.port, PEERS, EACH)
    waiting = socket.socket()  # one more from a client at its bound, that sends nothing and reads
    waiting.bind((PEERS[0], 0))
    waiting.connect(("127.0.0.1", server.port))

    def play() -> float | None:
        raw = Raw(server.url)
        try:
            observation(raw.ask("reset", {"split": "train", "index": 0}))
            reward: float | None = play_on(raw)["reward"]
            return reward
        finally:
            raw.close()

    refusal = until_closed(waiting)
    the_server_answers(server.url, "tasks", play)
    answers = [until_closed(sock, CLOSED_S) for sock in sockets]
    counts = server.guard.floods.counts()

    assert len(sockets) == len(PEERS) * EACH
    head, _, body = refusal.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 429 Too Many Requests\r\n") and b"connection: close" in head
    assert json.loads(body) == {
        "detail": "this address holds 4 connections to the server, the most one client may: close some "
        "before opening more"
    }
    # A refused client that has sent its request may see the close as a reset before it reads the 429.
    assert {answer[:31] for answer in answers} <= {b"", b"HTTP/1.1 429 Too Many Requests\r"}, answers
    assert counts == {
        "connections refused to clients holding the most they may": len(PEERS) * (EACH - LIMITS.per_client)
        + 1,
        "connections closed with a request unfinished": len(PEERS) * LIMITS.per_client,
    }
    assert server.guard.clients() == {}
    warned = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(warned) == len(counts), warned
    assert warned[0].startswith("refusing connections from 127.0.0.")
    assert "its request did not arrive whole within 2 s" in warned[1]


def test_a_request_whose_headers_come_after_an_answer_on_the_same_connection_is_timed_out_too(
    server: BackgroundServer,
) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_S)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = b""
    while not first.endswith(b'{"status":"healthy"}'):
        first += sock.recv(65536)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")

    rest = until_closed(sock, CLOSED_S)

    assert first.startswith(b"HTTP/1.1 200 OK\r\n")
    assert rest == b""
    assert server.guard.floods.counts() == {"connections closed with a request unfinished": 1}


@pytest.fixture
def descriptors_for_a_flood() -> Iterator[None]:
    """This process's descriptor limit raised for the flood's sockets (the hard limit permitting), and
    put back after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(4 * DESCRIPTORS, hard)), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.usefixtures("descriptors_for_a_flood")
def test_a_flood_of_half_requests_past_the_descriptor_limit_leaves_the_server_answering_and_its_log_small(
    tmp_path: Path, connect: Connect
) -> None:
    log = tmp_path / "serve.log"
    options = ("--max-concurrent-envs", "4")
    with (
        agent_env_serve(WHARF, *options, log=log, tmpdir=tmp_path, descriptors=DESCRIPTORS) as (_, url),
        contextlib.ExitStack() as held,
    ):
        sockets = opened(int(url.rsplit(":", 1)[1]), FLOOD_PEERS, FLOOD_EACH)
        for sock in sockets:
            held.callback(sock.close)

        def play() -> float | None:
            client = connect(url, message_timeout_s=ANSWER_S * 3)
            client.reset(split="train", index=SINGLE_TURN_TASK, timeout_s=30)
            reward: float | None = play_reference(client, "store-crate-000")[-1].reward
            return reward

        the_server_answers(url, "wharf", play)
        for sock in sockets:
            until_closed(sock, FLOOD_CLOSED_S)  # raises if one is still open past the bound
        written = log.read_text()

    assert len(sockets) > DESCRIPTORS, "the flood did not pass the server's descriptor limit"
    assert "Too many open files" not in written
    assert len(written.splitlines()) < 30, written[-3000:]
    assert "refusing connections from 127.0.0." in written
