"""Where a session opens when an `AgentEnv` spans several servers: on the one with the most room.

A fleet is the servers given (`AgentEnv([url, ...])`) or every address one name resolves to
(`discover="dns"`, as a Kubernetes headless Service gives). Room is what each server's `/status`
says (`max_concurrent_envs` less the sessions it holds), read at most `STATUS_EVERY_S` ago, less the
sessions this process placed there since; so trainer processes that share a fleet see each other's
sessions. A server that does not answer, serves other tasks or bundle content than the run started
with (its `tasks_fingerprint` differs, in its status or in a reset's answer) or is shutting down is
left out, and asked again `RETRY_S` later: once it answers as it should, it takes sessions again. A
session lost on a server marks it so at once, so the sessions still idle there move at their next
reset; a name is resolved again then, and every `RESOLVE_EVERY_S`.

A fleet of one URL places nothing: its sessions open there, as they always did; if its fingerprint
changes, the run cannot go on there and `changed` raises.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from agent_env._errors import ArgumentError
from agent_env.client._session import SessionClient, on_session_loop
from agent_env.client._taskapi import TaskAPI
from agent_env.client._tokens import bearer, resolve_token
from agent_env.training.trl._errors import FleetMismatchError, ServerAtCapacityError, ServerUnavailableError

STATUS_EVERY_S = 1.0
"""How old a server's `/status` may be when a session is placed by it."""
RETRY_S = 5.0
"""How long a server left out waits before it is asked again."""
RESOLVE_EVERY_S = 30.0
"""How often a discovered fleet's name is resolved again, besides after a lost server."""
STATUS_TIMEOUT_S = 3.0

DISCOVERY = ("dns",)

log = logging.getLogger("agent_env.training.trl")


@dataclass(frozen=True)
class FleetSettings:
    """The servers of a fleet, plain data, so that it pickles with the factory into a spawned process."""

    urls: tuple[str, ...]
    """The servers, or with `discover` the one URL whose host names them all."""
    discover: str | None = None
    token: str | None = field(default=None, repr=False)
    """Sent to every server `tokens` does not name."""
    tokens: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    fingerprint: str | None = None
    """The tasks every server must serve (`ServerStatus.tasks_fingerprint`)."""

    @classmethod
    def of(
        cls,
        url: str | Sequence[str],
        *,
        discover: str | None = None,
        token: str | Mapping[str, str] | None = None,
    ) -> FleetSettings:
        """Check what a user passed `AgentEnv`, and say how to fix it."""
        if discover is not None and discover not in DISCOVERY:
            raise ArgumentError(
                f"discover must be one of {', '.join(map(repr, DISCOVERY))} or None, got {discover!r}"
            )
        urls = (url,) if isinstance(url, str) else tuple(url)
        if not urls or not all(isinstance(each, str) and each for each in urls):
            raise ArgumentError(f"AgentEnv needs a server URL or a list of them, got {url!r}")
        urls = tuple(each.rstrip("/") for each in urls)
        if len(set(urls)) != len(urls):
            twice = sorted({each for each in urls if urls.count(each) > 1})
            raise ArgumentError(f"the servers list {', '.join(twice)} more than once: name each server once")
        if discover is not None and len(urls) != 1:
            raise ArgumentError(
                f"discover={discover!r} takes one URL, whose host names the servers, not {len(urls)}"
            )
        if not isinstance(token, Mapping):
            return cls(urls, discover, resolve_token(token))
        if discover is not None:
            raise ArgumentError(
                "with discover='dns' the servers are known only by address: pass one token for all, "
                "not a dict"
            )
        tokens = {key.rstrip("/"): value for key, value in token.items()}
        if missing := [each for each in urls if each not in tokens]:
            raise ArgumentError(f"token names no token for {', '.join(missing)}: give one for each server")
        if stray := sorted(set(tokens) - set(urls)):
            raise ArgumentError(f"token names servers AgentEnv was not given: {', '.join(stray)}")
        return cls(urls, None, None, tuple((each, _checked(tokens[each])) for each in urls))

    @property
    def single(self) -> bool:
        """One server, given by URL: nothing to place."""
        return len(self.urls) == 1 and self.discover is None

    def token_for(self, url: str) -> str | None:
        return dict(self.tokens).get(url, self.token)

    def servers(self) -> tuple[str, ...]:
        """The servers' URLs now: those given, or those the name resolves to."""
        return resolve(self.urls[0]) if self.discover is not None else self.urls


def _checked(token: str) -> str:
    chosen = resolve_token(token)
    if chosen is None:
        raise ArgumentError("a server's token is empty: give each server its token")
    return chosen


def resolve(url: str) -> tuple[str, ...]:
    """`url` once for each address its host resolves to, in address order."""
    parsed = httpx.URL(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        found = socket.getaddrinfo(parsed.host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ServerUnavailableError(f"cannot resolve {parsed.host!r} to find the servers: {exc}") from None
    addresses = sorted({str(info[4][0]) for info in found}, key=ipaddress.ip_address)
    if not addresses:
        raise ServerUnavailableError(f"{parsed.host!r} resolves to no address: no server to use")
    return tuple(str(parsed.copy_with(host=address)).rstrip("/") for address in addresses)


def task_apis(fleet: FleetSettings) -> list[TaskAPI]:
    """The Task API of each server now, each checked to answer and all to serve the same tasks; all
    closed but the first."""
    apis: list[TaskAPI] = []
    try:
        for url in fleet.servers():
            apis.append(TaskAPI(url, token=fleet.token_for(url)))
        check_same_tasks(apis)
    except BaseException:
        for api in apis:
            api.close()
        raise
    for api in apis[1:]:
        api.close()
    return apis


def check_same_tasks(apis: Sequence[TaskAPI]) -> None:
    """Refuse servers that do not all serve the same tasks, naming those that differ from the most."""
    if len(apis) < 2:
        return
    by_fingerprint: dict[str | None, list[str]] = {}
    for api in apis:
        by_fingerprint.setdefault(api.fingerprint, []).append(api.url)
    if len(by_fingerprint) == 1 and None not in by_fingerprint:
        return
    if None in by_fingerprint:
        raise FleetMismatchError(
            f"{', '.join(by_fingerprint[None])} list no tasks fingerprint in GET /status: serve the bundle "
            "on every server with this version of agent_env"
        )
    groups = sorted(by_fingerprint.items(), key=lambda group: -len(group[1]))
    most, others = groups[0], groups[1:]
    differ = "; ".join(f"{', '.join(urls)} serve {fingerprint}" for fingerprint, urls in others)
    raise FleetMismatchError(
        f"the servers do not serve the same tasks and bundle content: {differ}, not {most[0]} as "
        f"{', '.join(most[1])} do. Serve the same bundle (the same files), with the same options, on "
        "every server"
    )


@dataclass
class _Server:
    """What the fleet knows of one server."""

    url: str
    env_name: str | None = None
    room: int = 0
    """Sessions it can still take: as its last `/status` said, less those placed there since."""
    held: int = 0
    max_sessions: int = 0
    left_out: str | None = "not asked yet"
    """Why no session is placed here now; None when it takes them."""
    read_at: float = float("-inf")


class Fleet:
    """The servers sessions are placed on, for one `AgentEnv` in one process."""

    def __init__(self, settings: FleetSettings, *, connect_timeout_s: float) -> None:
        self.settings = settings
        self._connect_timeout_s = connect_timeout_s
        self._lock = threading.Lock()
        self._servers: dict[str, _Server] = {}
        self._resolved_at = float("-inf")
        self._lost_since_resolved = False
        self._warned: set[tuple[str, str]] = set()

    def open_session(self) -> SessionClient:
        """A session open on the server with the most room; another if that one fails to open it."""
        if self.settings.single:
            return self._open(self.settings.urls[0])
        tried: set[str] = set()
        while True:
            server = self._place(tried)
            tried.add(server.url)
            try:
                return self._open(server.url)
            except ServerAtCapacityError:
                with self._lock:
                    server.room = 0
            except ServerUnavailableError as lost:
                self.lost(server.url, str(lost))

    def usable(self, url: str) -> bool:
        """Whether sessions may stay on the server at `url`: it was not lost, and still answers."""
        if self.settings.single:
            return True
        with self._lock:
            server = self._servers.get(url)
            return server is not None and server.left_out is None

    def lost(self, url: str, why: str) -> None:
        """A session on `url` was lost: place nothing there until it answers again (asked at once)."""
        if self.settings.single:
            return
        with self._lock:
            server = self._servers.get(url)
            if server is not None:
                server.left_out, server.read_at = f"lost a session: {why}", float("-inf")
            self._lost_since_resolved = True

    def changed(self, url: str, fingerprint: str | None) -> str | None:
        """Check a reset's answer from `url` against the run's fingerprint: None if it matches (or
        either is unknown: an older server). Else the server was restarted with other tasks or bundle
        content, whose rewards are not the run's: in a fleet it is left out until its status says
        otherwise, and why is returned; a single server raises `FleetMismatchError`, for the run cannot
        go on there."""
        expected = self.settings.fingerprint
        if expected is None or fingerprint is None or fingerprint == expected:
            return None
        why = _serves_other(fingerprint, expected)
        if self.settings.single:
            raise FleetMismatchError(
                f"the server at {url} {why}: it was restarted with another copy of the bundle, whose "
                "rewards are not this run's. Serve the run's bundle there again, or start a new run "
                "(a new AgentEnv) on what it serves now"
            )
        with self._lock:
            server = self._servers.get(url)
            if server is not None:
                self._leave_out(server, why)
        return f"the server at {url} {why}"

    def _open(self, url: str) -> SessionClient:
        session = SessionClient(
            url, connect_timeout_s=self._connect_timeout_s, token=self.settings.token_for(url)
        )
        session.open()
        return session

    def _place(self, tried: set[str]) -> _Server:
        with self._lock:
            for force in (False, True):
                self._refresh(force=force)
                open_here = [s for s in self._servers.values() if s.left_out is None and s.url not in tried]
                best = max(open_here, key=lambda server: server.room, default=None)
                if best is not None and best.room > 0:
                    best.room -= 1
                    return best
            raise self._no_room()

    def _refresh(self, *, force: bool) -> None:
        now = time.monotonic()
        if self.settings.discover is not None and (
            force or self._lost_since_resolved or now - self._resolved_at > RESOLVE_EVERY_S
        ):
            self._resolve(now)
        elif not self._servers:
            self._servers = {url: _Server(url) for url in self.settings.urls}
        due = [
            server
            for server in self._servers.values()
            if force or now - server.read_at > (STATUS_EVERY_S if server.left_out is None else RETRY_S)
        ]
        if due:
            on_session_loop(self._read_all(due)).result()

    def _resolve(self, now: float) -> None:
        try:
            urls = resolve(self.settings.urls[0])
        except ServerUnavailableError as failed:
            log.warning("%s: keeping the servers known before", failed)
            return
        self._servers = {url: self._servers.get(url) or _Server(url) for url in urls}
        self._resolved_at, self._lost_since_resolved = now, False

    async def _read_all(self, servers: Sequence[_Server]) -> None:
        async with httpx.AsyncClient(timeout=STATUS_TIMEOUT_S, trust_env=False) as client:
            await asyncio.gather(*(self._read(client, server) for server in servers))

    async def _read(self, client: httpx.AsyncClient, server: _Server) -> None:
        headers = bearer(self.settings.token_for(server.url))
        try:
            if server.env_name is None:
                names = await _json(client, f"{server.url}/list_environments", headers)
                server.env_name = str(names[0])
            status = await _json(client, f"{server.url}/{server.env_name}/status", headers)
            held, most = int(status["sessions"]["held"]), int(status["max_concurrent_envs"])
        except Exception as exc:
            self._leave_out(server, f"no answer to GET /status ({type(exc).__name__}: {exc})")
            return
        fingerprint = status.get("tasks_fingerprint")
        if self.settings.fingerprint is not None and fingerprint != self.settings.fingerprint:
            self._leave_out(server, _serves_other(fingerprint, self.settings.fingerprint))
        elif status.get("shutting_down"):
            self._leave_out(server, "is shutting down")
        else:
            server.held, server.max_sessions, server.room = held, most, max(0, most - held)
            server.left_out, server.read_at = None, time.monotonic()

    def _leave_out(self, server: _Server, why: str) -> None:
        server.left_out, server.read_at = why, time.monotonic()
        if (server.url, why) not in self._warned:
            self._warned.add((server.url, why))
            log.warning("placing no session on %s: it %s", server.url, why)

    def _no_room(self) -> Exception:
        answering = [s for s in self._servers.values() if s.left_out is None]
        each = "; ".join(
            f"{s.url}: {s.held}/{s.max_sessions} held" if s.left_out is None else f"{s.url}: {s.left_out}"
            for s in self._servers.values()
        )
        if not answering:
            return ServerUnavailableError(f"no server of the fleet takes a session ({each})")
        most = sum(s.max_sessions for s in answering)
        return ServerAtCapacityError(
            f"every server of the fleet is at its session limit: {len(answering)} answering hold {most} "
            f"sessions at most ({each}). TRL keeps an environment for each rollout of a generation batch, "
            "per toolset, and each holds a session: raise MAX_CONCURRENT_ENVS (or --max-concurrent-envs) "
            "on the servers, or add servers"
        )


def _serves_other(fingerprint: object, expected: str) -> str:
    return (
        "serves other tasks or bundle content than the run started with "
        f"(fingerprint {fingerprint}, not {expected})"
    )


async def _json(client: httpx.AsyncClient, url: str, headers: Mapping[str, str]) -> Any:
    response = await client.get(url, headers=headers)
    response.raise_for_status()
    return response.json()


_FLEETS: dict[str, Fleet] = {}
_FLEETS_LOCK = threading.Lock()


def fleet_of(key: str, settings: FleetSettings, *, connect_timeout_s: float) -> Fleet:
    """The one fleet of the `AgentEnv` whose key this is, in this process (made on first use, in a
    process the factory was pickled into)."""
    with _FLEETS_LOCK:
        known = _FLEETS.get(key)
        if known is None or known.settings != settings:
            known = _FLEETS[key] = Fleet(settings, connect_timeout_s=connect_timeout_s)
        return known
