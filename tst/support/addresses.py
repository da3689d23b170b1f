"""Loopback addresses as a cluster gives them: servers sharing one port on several addresses, and a
name that resolves to all of them."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Sequence
from typing import Any

import pytest


def free_port_on(hosts: Sequence[str]) -> int:
    """A port no one listens on at any of `hosts`, as a Kubernetes Service's pods share one."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((hosts[0], 0))
            port = int(probe.getsockname()[1])
        if all(_free(host, port) for host in hosts[1:]):
            return port
    raise AssertionError(f"no port is free on all of {', '.join(hosts)}")


def _free(host: str, port: int) -> bool:
    with socket.socket() as probe, contextlib.suppress(OSError):
        probe.bind((host, port))
        return True
    return False


def answer_names(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Names this process resolves itself from now on (name -> addresses, changed at will); any other
    name as the system does. `socket.getaddrinfo` is what every resolution here goes through."""
    names: dict[str, list[str]] = {}
    system = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host not in names:
            return system(host, port, *args, **kwargs)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, int(port)))
            for address in names[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return names
