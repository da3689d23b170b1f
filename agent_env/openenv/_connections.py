"""Bounds on the connections a server holds, kept where uvicorn makes them, before any request is read.

Each connection holds a file descriptor from the moment it is accepted, and a process has only so
many: 10,000 connections that had each sent half a request header took all of them, so `/health`
and new sessions failed (and asyncio logged every failed accept: 239 MB a minute). A client that
sent but never read kept its session for good: its answers filled the socket, and the close
uvicorn makes on a missed ping waits for them to be read. So `agent-env serve` and
`BackgroundServer` run uvicorn with a `ConnectionGuard`, which holds each connection to
`ConnectionLimits`:

- at most `per_client` connections from one client address (an IPv6 client's whole /64) and `total`
  in all, below what the process's descriptors allow once room is kept for what its sessions open
  (sandboxes, MCP servers, recording files), yet never fewer than a client's sessions need; one more
  is answered 429 or 503 and closed at once, before anything of it is read;
- a request must arrive whole (headers, and body if it has one) within `request_timeout_s` of its
  connection or of the answer before it on the same connection, or the connection is closed
  (uvicorn has no such bound: a request whose headers never ended held its connection for good);
- an answer that cannot be handed to the client's socket within `send_timeout_s` closes the
  connection, so a WebSocket client that does not read loses its session and its episode is torn
  down (the transport's buffer is kept empty: any byte the socket does not take starts that clock);
- what clients can make happen at will (refusals, these closes, running out of descriptors all the
  same) is logged as a line, then as a running count at most once a minute: never a line each.

All of it is per connection: a check when it is made, a timer per HTTP request. A WebSocket's
messages pass through one more call on their way in (`_GuardedWebSocket.data_received`); its
answers go to the socket untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import ipaddress
import json
import logging
import resource
import socket
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from http import HTTPStatus
from typing import Any, cast

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_env._errors import ArgumentError
from agent_env._private.openenv_uvicorn import ProtocolClass, protocol_classes

log = logging.getLogger("agent_env.openenv")

REQUEST_TIMEOUT_S = 5.0
"""How long a request may take to arrive whole: from its connection, or from the answer before it."""
SEND_TIMEOUT_S = 30.0
"""How long an answer may wait for the client's socket to take it before the connection is closed:
a client that reads what it asked for never waits this long, one that does not read loses its
session this long after its socket filled up."""
DEFAULT_MAX_CONNECTIONS = 4096
"""The most connections a server holds at once, however many descriptors it has."""
CLIENT_ROOM = 64
"""Connections one client may hold besides the server's sessions: its Task API requests, status reads."""
KEPT_DESCRIPTORS = 64
"""Descriptors kept for the server itself: its listening socket, event loop, log and recording files."""
DESCRIPTORS_PER_SESSION = 8
"""Descriptors kept for each session: its sandbox's shell and pipes, its MCP servers' (an estimate)."""
MAX_BACKLOG = 2048
"""The largest listen backlog (uvicorn's default): connections the event loop takes from the kernel in
one go, each holding a descriptor until it is refused."""
DESCRIPTOR_TARGET = 65_536
"""Where `raise_descriptor_limit` takes the soft limit (the hard limit permitting): room enough for
`DEFAULT_MAX_CONNECTIONS`, without handing every sandboxed command a million descriptors."""
LOG_EVERY_S = 60.0
"""The most often a flood of refusals or closes of one kind is logged, as a running count."""

_DESCRIPTOR_ERRORS = (errno.EMFILE, errno.ENFILE)


@dataclass(frozen=True)
class ConnectionLimits:
    """What a server's connections are held to (see `agent_env.openenv._connections`).

    `for_sessions(n)` derives them from the server's capacity and the process's descriptor limit;
    tests pass smaller ones. `backlog` is the listening socket's: how many connections the server
    takes from the kernel at once, which it must keep descriptors for beyond `total`.
    """

    per_client: int
    total: int
    request_timeout_s: float = REQUEST_TIMEOUT_S
    send_timeout_s: float = SEND_TIMEOUT_S
    backlog: int = MAX_BACKLOG

    def __post_init__(self) -> None:
        for name in ("per_client", "total", "backlog"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentError(f"ConnectionLimits.{name} must be a positive integer, got {value!r}")
        for name in ("request_timeout_s", "send_timeout_s"):
            seconds = getattr(self, name)
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
                raise ArgumentError(
                    f"ConnectionLimits.{name} must be a number of seconds > 0, got {seconds!r}"
                )

    @classmethod
    def for_sessions(cls, sessions: int, *, descriptors: int | None = None) -> ConnectionLimits:
        """The limits of a server of `sessions` capacity in a process of `descriptors` (default: its
        soft limit now): a client may hold its sessions and `CLIENT_ROOM` more; `total` is what the
        descriptors leave once the server's own, `DESCRIPTORS_PER_SESSION` for each session and twice
        the backlog (accepted before they can be refused) are kept, at most `DEFAULT_MAX_CONNECTIONS`,
        and never fewer than one client's (`shortfall` then says to raise the descriptor limit)."""
        available = descriptor_limit() if descriptors is None else descriptors
        backlog = min(MAX_BACKLOG, max(64, available // 8))
        room = available - _kept(sessions, backlog)
        per_client = sessions + CLIENT_ROOM
        return cls(
            per_client=per_client,
            total=max(per_client, min(DEFAULT_MAX_CONNECTIONS, room)),
            backlog=backlog,
        )

    def shortfall(self, sessions: int, *, descriptors: int | None = None) -> str | None:
        """What to tell whoever serves `sessions` with these limits, if the descriptor limit (default:
        the process's now) cannot hold `total` connections beside what the server keeps."""
        available = descriptor_limit() if descriptors is None else descriptors
        needed = _kept(sessions, self.backlog) + self.total
        if available >= needed:
            return None
        return (
            f"the process's descriptor limit ({available}) is below the {needed} that {self.total} "
            f"connections and {sessions} sessions may take: raise it (`ulimit -n`, or the service's "
            "LimitNOFILE), or a flood of connections may leave none for sandboxes and new sessions"
        )


def _kept(sessions: int, backlog: int) -> int:
    """Descriptors kept from connections: the server's own, its sessions', and twice the backlog."""
    return KEPT_DESCRIPTORS + DESCRIPTORS_PER_SESSION * sessions + 2 * backlog


def descriptor_limit() -> int:
    """The process's soft limit on open descriptors (RLIMIT_NOFILE)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return DESCRIPTOR_TARGET if soft == resource.RLIM_INFINITY else soft


def raise_descriptor_limit(target: int = DESCRIPTOR_TARGET) -> int:
    """Raise the soft descriptor limit toward `target`, as far as the hard limit allows; the soft
    limit now. Many systems start processes at 1,024, far below what they permit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < target:
        wanted = target if hard == resource.RLIM_INFINITY else min(hard, target)
        if wanted > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            except (ValueError, OSError) as refused:
                log.warning("could not raise the descriptor limit from %d to %d: %s", soft, wanted, refused)
    return descriptor_limit()


class ConnectionGuard:
    """One server's connections, counted by client and held to `limits`; `config` makes uvicorn's
    configuration that sends each connection through it. Used on the server's event loop only."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open = 0
        self._by_client: Counter[str] = Counter()
        self.floods = FloodLog()
        self._loop: asyncio.AbstractEventLoop | None = None

    def config(self, app: ASGIApp, **options: Any) -> uvicorn.Config:
        """`uvicorn.Config(app, **options)`, with every connection held to this guard's limits
        (`http` and `ws` choose uvicorn's protocols, as they do for uvicorn; `backlog` is the limits')."""
        http, ws = protocol_classes(options.pop("http", "auto"), options.pop("ws", "auto"))
        return uvicorn.Config(
            _TimedRequests(app, self),
            # uvicorn calls these as it calls its own protocol classes (`agent_env._private.openenv_uvicorn`)
            http=cast(Any, partial(_GuardedHttp, self, http)),
            ws=cast(Any, partial(_GuardedWebSocket, ws)) if ws is not None else "none",
            backlog=self.limits.backlog,
            **options,
        )

    def clients(self) -> dict[str, int]:
        """The connections held now, by client."""
        return dict(self._by_client)

    def admit(self, transport: asyncio.Transport) -> _Connection | None:
        """The connection, counted; or None, once it is answered 429 or 503 and closed."""
        self.watch_loop()
        client = client_of(transport.get_extra_info("peername"))
        if self.open >= self.limits.total:
            self._refuse(
                transport,
                HTTPStatus.SERVICE_UNAVAILABLE,
                f"the server holds {self.open} connections, the most it takes at once: try again shortly",
                "connections refused with the server at its most",
                f"refusing connections: the server holds {self.open}, the most it takes at once "
                f"(ConnectionLimits.total; the last from {client})",
            )
            return None
        held = self._by_client[client]
        if held >= self.limits.per_client:
            self._refuse(
                transport,
                HTTPStatus.TOO_MANY_REQUESTS,
                f"this address holds {held} connections to the server, the most one client may: "
                "close some before opening more",
                "connections refused to clients holding the most they may",
                f"refusing connections from {client}: it holds {held}, the most one client may "
                "(ConnectionLimits.per_client), as a client that opens connections and leaves them "
                "unused does (slowloris)",
            )
            return None
        self.open += 1
        self._by_client[client] = held + 1
        return _Connection(self, transport, client)

    def release(self, client: str) -> None:
        self.open -= 1
        left = self._by_client[client] - 1
        if left > 0:
            self._by_client[client] = left
        else:
            del self._by_client[client]

    def watch_loop(self) -> None:
        """Log running out of descriptors on this loop as a flood is logged (asyncio logs each failed
        accept, thousands a second, with its traceback)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._loop = loop
        previous = loop.get_exception_handler()

        def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            error = context.get("exception")
            if isinstance(error, OSError) and error.errno in _DESCRIPTOR_ERRORS:
                self.floods.happened(
                    "failures for want of descriptors",
                    f"{context.get('message', 'the event loop')}: {error}; the server holds "
                    f"{self.open} connections: raise the descriptor limit or lower ConnectionLimits",
                    level=logging.ERROR,
                )
            elif previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        loop.set_exception_handler(handle)

    def _refuse(
        self, transport: asyncio.Transport, status: HTTPStatus, detail: str, kind: str, line: str
    ) -> None:
        body = json.dumps({"detail": detail}).encode()
        head = (
            f"HTTP/1.1 {status.value} {status.phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        transport.write(head.encode() + body)
        transport.close()
        self.floods.happened(kind, line)


def client_of(peer: Any) -> str:
    """Whose a connection is, for the per-client bound: its IPv4 address, or its IPv6 address's /64
    (a host is commonly given a whole /64); a Unix socket's peers are one client."""
    if not isinstance(peer, tuple) or not peer:
        return "local"
    try:
        address = ipaddress.ip_address(peer[0])
    except ValueError:
        return str(peer[0])
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address.exploded.split('%')[0]}/64", strict=False))
    return str(address)


_CONNECTION: contextvars.ContextVar[_Connection | None] = contextvars.ContextVar(
    "agent_env_connection", default=None
)
"""The connection whose bytes are being read; the tasks uvicorn starts for its requests inherit it."""


class _Connection:
    """One admitted connection: its client's count, the clock its next request runs against, and the
    one its answers run against once the client's socket stops taking them."""

    __slots__ = (
        "_guard",
        "_request_timer",
        "_send_timer",
        "_served",
        "_started",
        "_transport",
        "client",
        "gone",
    )

    def __init__(self, guard: ConnectionGuard, transport: asyncio.Transport, client: str) -> None:
        self._guard = guard
        self._transport = transport
        self.client = client
        self.gone = False
        self._request_timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None
        self._served = False
        """Whether a request of this connection arrived whole: one that then sends nothing more is a
        client's idle keep-alive connection, not a slow request."""
        self._started = False
        """Whether a byte of the awaited request has arrived."""
        self.expect_request()

    def expect_request(self) -> None:
        """Start the clock for the next request to arrive whole."""
        if self.gone:
            return
        self._started = False
        if self._request_timer is not None:
            self._request_timer.cancel()
        self._request_timer = asyncio.get_running_loop().call_later(
            self._guard.limits.request_timeout_s, self._request_late
        )

    def bytes_arrived(self) -> None:
        self._started = True

    def request_arrived(self) -> None:
        self._served = True
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    def reading(self, receive: Receive) -> Receive:
        """`receive`, telling this connection once the request's body has arrived whole."""

        async def read() -> Message:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                self.request_arrived()
            return message

        return read

    def send_stalled(self) -> None:
        if self._send_timer is None and not self.gone:
            self._send_timer = asyncio.get_running_loop().call_later(
                self._guard.limits.send_timeout_s, self._send_late
            )

    def send_resumed(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def release(self) -> None:
        """The connection is closed: stop its clocks and uncount it, once."""
        if self.gone:
            return
        self.gone = True
        self.request_arrived()
        self.send_resumed()
        self._guard.release(self.client)

    def _request_late(self) -> None:
        self._request_timer = None
        if self._served and not self._started:  # a client's keep-alive connection, idle: closed quietly
            self._transport.close()
            return
        seconds = self._guard.limits.request_timeout_s
        self._guard.floods.happened(
            "connections closed with a request unfinished",
            f"closed a connection from {self.client}: its request did not arrive whole within "
            f"{seconds:g} s of the connection or of the answer before it (ConnectionLimits."
            "request_timeout_s), as a client that sends headers a piece at a time does (slowloris)",
        )
        self._transport.abort()

    def _send_late(self) -> None:
        self._send_timer = None
        seconds = self._guard.limits.send_timeout_s
        self._guard.floods.happened(
            "connections closed with answers unread",
            f"closed a connection from {self.client}: its socket took none of the server's answer "
            f"for {seconds:g} s (ConnectionLimits.send_timeout_s), as a client that sends and never "
            "reads does; its session ends and its episode is torn down",
        )
        self._transport.abort()


class _GuardedHttp(asyncio.Protocol):
    """uvicorn's HTTP protocol for one connection, made only once the connection is admitted."""

    def __init__(self, guard: ConnectionGuard, protocol: ProtocolClass, **keywords: Any) -> None:
        self._guard = guard
        self._make = partial(protocol, **keywords)
        self._connection: _Connection | None = None
        self._inner: asyncio.Protocol | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)
        self._connection = self._guard.admit(stream)
        if self._connection is None:
            return
        stream.set_write_buffer_limits(high=0)  # any byte the socket does not take starts the send clock
        _send_at_once(stream)
        self._inner = self._make()
        self._inner.connection_made(stream)

    def data_received(self, data: bytes) -> None:
        if self._inner is None:
            return
        assert self._connection is not None  # admitted, as its protocol was made
        self._connection.bytes_arrived()
        entered = _CONNECTION.set(self._connection)
        try:
            self._inner.data_received(data)
        finally:
            _CONNECTION.reset(entered)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._connection is not None:
            self._connection.release()
        if self._inner is not None:
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._connection is not None and self._inner is not None:
            self._connection.send_stalled()
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._connection is not None and self._inner is not None:
            self._connection.send_resumed()
            self._inner.resume_writing()


class _GuardedWebSocket(asyncio.Protocol):
    """uvicorn's WebSocket protocol for a connection upgraded from `_GuardedHttp`, which it takes over."""

    def __init__(self, protocol: ProtocolClass, **keywords: Any) -> None:
        self._connection = _CONNECTION.get()  # made within the upgraded connection's data_received
        self._inner = protocol(**keywords)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._connection is not None:
            self._connection.request_arrived()  # the upgrade's request, whole
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._connection is not None:
            self._connection.release()
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._connection is not None:
            self._connection.send_stalled()
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._connection is not None:
            self._connection.send_resumed()
        self._inner.resume_writing()


class _TimedRequests:
    """The app, telling each HTTP request's connection when the request has arrived whole and when
    its answer is done (the clock then runs for the next request on that connection)."""

    def __init__(self, app: ASGIApp, guard: ConnectionGuard) -> None:
        self.app = app
        self._guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            self._guard.watch_loop()
        connection = _CONNECTION.get()
        if connection is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _has_body(scope):
            receive = connection.reading(receive)
        else:
            connection.request_arrived()
        try:
            await self.app(scope, receive, send)
        finally:
            connection.expect_request()


def _send_at_once(transport: asyncio.Transport) -> None:
    """Turn off Nagle's algorithm on a TCP connection, as asyncio does for the sockets it makes: one
    made by `socket.create_server` (protocol 0) is skipped by asyncio, and an answer whose head and
    body go out in two writes then waits for the client's delayed ACK, about 40 ms a request."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False


@dataclass
class _Tally:
    total: int = 0
    since: int = 0
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


class FloodLog:
    """What clients can make happen at will, logged without a flood: the first of each kind in full,
    then how many more, in a line at most every `every_s` while they go on; after a quiet spell the
    next is told in full again. Used on an event loop."""

    def __init__(self, every_s: float = LOG_EVERY_S, logger: logging.Logger = log) -> None:
        self.every_s = every_s
        self._log = logger
        self._tallies: dict[str, _Tally] = {}

    def happened(self, kind: str, line: str, *, level: int = logging.WARNING) -> None:
        """One more of `kind` (a plural noun phrase); `line` says what happened, if it is logged."""
        tally = self._tallies.setdefault(kind, _Tally())
        tally.total += 1
        if tally.timer is not None:
            tally.since += 1
            return
        self._log.log(
            level, "%s (more of these are counted, in a line at most every %g s)", line, self.every_s
        )
        with contextlib.suppress(RuntimeError):  # no loop runs (it is closing): the next is told in full
            tally.timer = asyncio.get_running_loop().call_later(self.every_s, self._count, kind, level)

    def counts(self) -> dict[str, int]:
        """How many of each kind have happened."""
        return {kind: tally.total for kind, tally in self._tallies.items()}

    def _count(self, kind: str, level: int) -> None:
        tally = self._tallies[kind]
        if tally.since == 0:
            tally.timer = None
            return
        self._log.log(
            level, "%s: %d more in the last %g s, %d in all", kind, tally.since, self.every_s, tally.total
        )
        tally.since = 0
        tally.timer = asyncio.get_running_loop().call_later(self.every_s, self._count, kind, level)
