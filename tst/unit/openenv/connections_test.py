"""The bounds on a server's connections (`agent_env.openenv._connections`), piece by piece: the limits
a capacity and a descriptor limit give, whose a connection is, the flood log, and each bound as a
client meets it on a real server on loopback (the reliability tier floods them)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from agent_env._errors import ArgumentError
from agent_env.openenv import (
    BackgroundServer,
    ConnectionLimits,
    _connections as connections,
    build_served_app,
)
from agent_env.openenv._connections import (
    DEFAULT_MAX_CONNECTIONS,
    ConnectionGuard,
    FloodLog,
    client_of,
)
from agent_env.testing import FakeTask, fake_served
from tst.support.raw_http import answer_of, request_head
from tst.support.waiting import until

pytestmark = pytest.mark.needs("openenv_installed")

ANSWER_S = 10.0
LIMITS = ConnectionLimits(per_client=2, total=3, request_timeout_s=0.5)
PATIENT = ConnectionLimits(per_client=2, total=3, request_timeout_s=60.0)
"""Limits whose request timeout closes no connection while a test runs."""


def served(limits: ConnectionLimits) -> Iterator[BackgroundServer]:
    app = build_served_app(fake_served({"train": [FakeTask("store")]}))
    with BackgroundServer(app, limits=limits) as server:
        yield server


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    yield from served(LIMITS)


@pytest.fixture
def patient_server() -> Iterator[BackgroundServer]:
    yield from served(PATIENT)


def connected(server: BackgroundServer, peer: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.bind((peer, 0))
    sock.settimeout(ANSWER_S)
    sock.connect(("127.0.0.1", server.port))
    return sock


@pytest.mark.parametrize(
    ("descriptors", "sessions", "per_client", "total", "backlog"),
    [
        (1024, 64, 128, 192, 128),  # 1024 - 64 kept - 8 x 64 sessions - 2 x 128 backlog
        (20_000, 64, 128, DEFAULT_MAX_CONNECTIONS, 2048),
        (65_536, 512, 576, DEFAULT_MAX_CONNECTIONS, 2048),
        (512, 4, 68, 288, 64),
    ],
)
def test_the_limits_of_a_capacity_keep_descriptors_for_the_server_its_sessions_and_its_backlog(
    descriptors: int, sessions: int, per_client: int, total: int, backlog: int
) -> None:
    limits = ConnectionLimits.for_sessions(sessions, descriptors=descriptors)

    assert (limits.per_client, limits.total, limits.backlog) == (per_client, total, backlog)
    assert limits.shortfall(sessions, descriptors=descriptors) is None


def test_a_descriptor_limit_too_low_for_the_sessions_still_lets_a_client_hold_them_and_says_to_raise_it() -> (
    None
):
    limits = ConnectionLimits.for_sessions(256, descriptors=1024)

    assert (limits.per_client, limits.total) == (256 + 64, 256 + 64)
    assert (limits.shortfall(256, descriptors=1024) or "").startswith(
        "the process's descriptor limit (1024) is below the 2688 that 320 connections and 256 sessions "
        "may take: raise it (`ulimit -n`"
    )


@pytest.mark.parametrize("field", ["per_client", "total", "backlog", "request_timeout_s", "send_timeout_s"])
def test_limits_refuse_a_bound_that_is_not_positive(field: str) -> None:
    values: dict[str, float] = {"per_client": 1, "total": 1, field: 0}

    with pytest.raises(ArgumentError, match=f"ConnectionLimits.{field} must be"):
        ConnectionLimits(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("peer", "client"),
    [
        (("127.0.0.2", 4321), "127.0.0.2"),
        (("2001:db8:1:2:aaaa::1", 4321, 0, 0), "2001:db8:1:2::/64"),
        (("2001:db8:1:2:bbbb::9", 80, 0, 0), "2001:db8:1:2::/64"),
        (("::ffff:10.0.0.7", 4321, 0, 0), "10.0.0.7"),
        ("", "local"),
        (None, "local"),
    ],
)
def test_a_connection_is_its_clients_by_ipv4_address_or_ipv6_64(peer: object, client: str) -> None:
    assert client_of(peer) == client


@pytest.mark.parametrize(
    ("soft", "hard", "target", "raised"),
    [(256, 4096, 65_536, 4096), (256, 4096, 2048, 2048), (512, 512, 65_536, 512), (4000, 4096, 2048, 4000)],
)
def test_the_descriptor_limit_is_raised_toward_its_target_as_far_as_the_hard_limit_allows_never_lowered(
    soft: int, hard: int, target: int, raised: int
) -> None:
    code = (
        "import resource\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({soft}, {hard}))\n"
        "from agent_env.openenv._connections import raise_descriptor_limit\n"
        f"print(raise_descriptor_limit({target}), *resource.getrlimit(resource.RLIMIT_NOFILE))\n"
    )

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.stdout.split() == [str(raised), str(raised), str(hard)], done.stderr


def test_a_flood_is_logged_as_its_first_line_then_a_count_at_most_once_a_period(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="agent_env.openenv")
    floods = FloodLog(every_s=0.2)

    async def flood() -> None:
        for index in range(1000):
            floods.happened("things refused", f"refused thing {index}")
        await asyncio.sleep(0.5)  # a count, then a quiet period
        floods.happened("things refused", "refused thing 1000")

    asyncio.run(flood())
    lines = [record.getMessage() for record in caplog.records]

    assert lines == [
        "refused thing 0 (more of these are counted, in a line at most every 0.2 s)",
        "things refused: 999 more in the last 0.2 s, 1000 in all",
        "refused thing 1000 (more of these are counted, in a line at most every 0.2 s)",
    ]
    assert floods.counts() == {"things refused": 1001}


def test_running_out_of_descriptors_is_logged_as_a_flood_and_other_loop_errors_as_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    guard = ConnectionGuard(LIMITS)

    async def exhausted() -> None:
        guard.watch_loop()
        loop = asyncio.get_running_loop()
        for _ in range(500):
            loop.call_exception_handler(
                {
                    "message": "socket.accept() out of system resource",
                    "exception": OSError(errno.EMFILE, "Too many open files"),
                }
            )
        loop.call_exception_handler({"message": "something else", "exception": ValueError("other")})

    asyncio.run(exhausted())
    lines = [record.getMessage() for record in caplog.records]

    assert len(lines) == 2, lines
    assert lines[0].startswith("socket.accept() out of system resource: [Errno 24] Too many open files;")
    assert lines[1] == "something else"
    assert guard.floods.counts() == {"failures for want of descriptors": 500}


def test_a_connection_that_sends_nothing_is_closed_after_the_request_timeout(
    server: BackgroundServer,
) -> None:
    sock = connected(server)

    assert sock.recv(1) == b""  # closed, within ANSWER_S
    assert server.guard.floods.counts() == {"connections closed with a request unfinished": 1}


def test_a_kept_alive_connection_left_idle_after_its_answer_is_closed_quietly_as_no_slowloris(
    server: BackgroundServer,
) -> None:
    idle = connected(server)
    idle.sendall(request_head("/tasks/num_tasks", "Content-Length: 17") + b'{"split":"train"}')
    answered = b""
    while b'{"num_tasks"' not in answered:
        answered += idle.recv(65536)

    with contextlib.suppress(ConnectionResetError):
        assert idle.recv(1) == b""  # closed, within ANSWER_S
    assert server.guard.floods.counts() == {}


def test_a_body_that_trickles_in_is_closed_after_the_request_timeout_and_one_in_time_is_answered(
    server: BackgroundServer,
) -> None:
    slow = connected(server)
    slow.sendall(request_head("/tasks/num_tasks", "Content-Length: 17") + b'{"split"')

    with contextlib.suppress(ConnectionResetError):  # closed unanswered, reset or not
        assert slow.recv(65536) == b""
    answered = httpx.post(f"{server.url}/tasks/num_tasks", json={"split": "train"}, timeout=ANSWER_S)

    assert answered.status_code == 200
    assert server.guard.floods.counts() == {"connections closed with a request unfinished": 1}


def test_past_the_total_bound_a_new_client_is_answered_503_and_closed_at_once(
    patient_server: BackgroundServer,
) -> None:
    server = patient_server
    held = [connected(server, "127.0.0.2"), connected(server, "127.0.0.2"), connected(server, "127.0.0.3")]
    assert until(lambda: sum(server.guard.clients().values()) == 3)

    status, headers, body = answer_of(connected(server, "127.0.0.4"))

    assert (status, headers["connection"]) == (503, "close")
    assert json.loads(body)["detail"] == (
        "the server holds 3 connections, the most it takes at once: try again shortly"
    )
    for sock in held:
        sock.close()
    assert until(lambda: server.guard.clients() == {})


def test_a_websocket_counts_as_its_clients_connection_until_it_closes(server: BackgroundServer) -> None:
    from websockets.sync.client import connect

    with connect(server.url.replace("http://", "ws://") + "/ws", open_timeout=ANSWER_S) as websocket:
        time.sleep(LIMITS.request_timeout_s * 2)  # past the request timeout, which the upgrade ended
        websocket.send(json.dumps({"type": "state"}))
        answer = json.loads(websocket.recv(timeout=ANSWER_S))
        assert server.guard.clients() == {"127.0.0.1": 1}

    assert answer["type"] == "state"
    assert until(lambda: server.guard.clients() == {})


def test_each_connection_the_server_accepts_sends_its_answers_without_waiting_for_the_clients_ack(
    patient_server: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nagle's algorithm off: with it on, an answer whose head and body are two writes waits for the
    client's delayed ACK, about 40 ms each keep-alive request (the listening socket of
    `socket.create_server` is one asyncio leaves it on)."""
    accepted: list[socket.socket] = []
    real_made = connections._GuardedHttp.connection_made

    def made(protocol: connections._GuardedHttp, transport: asyncio.BaseTransport) -> None:
        real_made(protocol, transport)
        accepted.append(transport.get_extra_info("socket"))

    monkeypatch.setattr(connections._GuardedHttp, "connection_made", made)
    with httpx.Client(base_url=patient_server.url, trust_env=False, timeout=ANSWER_S) as client:
        assert [client.get("/health").status_code for _ in range(3)] == [200, 200, 200]

        assert len(accepted) == 1, "the three requests share one keep-alive connection"
        assert accepted[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0, "read while it is open"
