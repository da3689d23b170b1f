"""Whether a request is addressed to this server and comes from its own pages: the Host and Origin rule.

Any web page can make a browser talk to 127.0.0.1: a WebSocket to it is allowed cross-site, and a DNS
name rebound to 127.0.0.1 makes even plain requests look same-site to the browser. What a page
cannot forge is the `Host` header (the name the browser looked up) and the `Origin` header (the
page's own). So a request is ours when its Host names a loopback address (127.0.0.0/8, ::1,
`localhost` and `*.localhost`, which browsers resolve to loopback themselves), any IP literal (a
browser sends one only when it connected to that address itself, which rebinding cannot arrange),
or a name the user allowed (`*` for any, behind a proxy that checks it); and when its Origin, if it
has one, is the Host's own scheme-less host and port or an allowed name (`Origin: null` is
foreign). Clients that are not browsers (OpenEnv's, httpx, the trainer) send no Origin.

The OpenEnv server's middleware (`agent_env.openenv._auth`) and the viewer use it; the standard
library alone, so the viewer's base install has it.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from agent_env._errors import ArgumentError

ALLOWED_HOSTS_VARIABLE = "AGENTENV_ALLOWED_HOSTS"
"""Comma-separated host names a server answers besides loopback and IP literals, when none are passed."""

ANY_HOST = "*"
"""The allowed host that allows every Host header (not every Origin)."""

_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
_HOW = f"--allow-host NAME (or {ALLOWED_HOSTS_VARIABLE}, or build_app(allowed_hosts=[...]))"


def names_loopback(host: str) -> bool:
    """Whether a Host header's name (a port, brackets and a final dot aside) is this machine's loopback."""
    name = _name_and_port(host)[0]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = _address(name)
    return address is not None and address.is_loopback


def binds_loopback(host: str) -> bool:
    """Whether a server bound to `host` (brackets and a final dot aside) listens on this machine's
    loopback alone: `localhost` or a loopback address. The one rule `agent-env serve` and the viewer
    decide by whether a token or `--host` consent is needed. Other names are not resolved, so a name
    that happens to resolve to loopback today is not taken on trust."""
    name, _ = _name_and_port(host if host.count(":") < 2 or host.startswith("[") else f"[{host}]")
    if name == "localhost":
        return True
    address = _address(name)
    return address is not None and address.is_loopback


@dataclass(frozen=True)
class AllowedHosts:
    """The names a server answers to besides loopback and IP literals; `refusal` applies the rule."""

    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, hosts: Iterable[str] | None = None) -> AllowedHosts:
        """`hosts`, else `AGENTENV_ALLOWED_HOSTS` (comma-separated); each a bare name, or `*`."""
        if hosts is None:
            hosts = os.environ.get(ALLOWED_HOSTS_VARIABLE, "").split(",")
        names = set()
        for raw in hosts:
            name = raw.strip().lower().rstrip(".")
            if not name:
                continue
            if name != ANY_HOST and (any(c in name for c in "/:[]@ *") or not name.isascii()):
                raise ArgumentError(
                    f"an allowed host is a bare name such as agent-env.example (no scheme, port or "
                    f"path), or {ANY_HOST} for any; got {raw!r}: check --allow-host or "
                    f"{ALLOWED_HOSTS_VARIABLE}"
                )
            names.add(name)
        return cls(frozenset(names))

    def refusal(self, hosts: list[str], origins: list[str], *, secure: bool = False) -> str | None:
        """Why a request with these Host and Origin headers is not this server's, or None if it is."""
        for host in hosts:
            if not self._host_allowed(host):
                return (
                    f"this server does not answer requests addressed to {host!r} (it answers loopback "
                    f"names, IP addresses and the hosts it is told to, which guards against DNS "
                    f"rebinding): to serve under that name, start it with {_HOW}"
                )
        for origin in origins:
            if not self._origin_allowed(origin, hosts, secure=secure):
                return (
                    f"this server does not answer requests from web pages of another origin "
                    f"({origin!r}), which any site could make a browser send: a client that is not "
                    f"a browser sends no Origin header; to allow a page of another host, start the "
                    f"server with {_HOW}"
                )
        return None

    def _host_allowed(self, host: str) -> bool:
        name = _name_and_port(host)[0]
        return (
            ANY_HOST in self.names or name in self.names or names_loopback(host) or _address(name) is not None
        )

    def _origin_allowed(self, origin: str, hosts: list[str], *, secure: bool) -> bool:
        try:
            parts = urlsplit(origin.strip())
            name, port = (parts.hostname or "").rstrip("."), parts.port
        except ValueError:
            return False
        if not name or parts.scheme not in _DEFAULT_PORTS:
            return False
        if name in self.names:
            return True
        own = (name, port if port is not None else _DEFAULT_PORTS[parts.scheme])
        default = 443 if secure else 80
        for host in hosts:
            host_name, host_port = _name_and_port(host)
            if own == (host_name, host_port if host_port is not None else default):
                return True
        return False


def _name_and_port(host: str) -> tuple[str, int | None]:
    """`name:port`, `[v6]:port` or a bare name: the name lowercased without a final dot, and the port
    (None if absent or not a number)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port = rest.removeprefix(":")
    elif host.count(":") == 1:
        name, _, port = host.partition(":")
    else:
        name, port = host, ""
    return name.rstrip("."), int(port) if port.isdigit() else None


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None
