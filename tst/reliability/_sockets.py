"""Clients on bare sockets that misbehave as an attacker's would: ones that send half a request and
wait, and WebSocket clients that send and never read. Each socket comes from a loopback address of
the test's choosing (127.0.0.2, 127.0.0.3, ...), so a test has as many distinct clients as it needs."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct

ANSWER_S = 10.0
HALF_REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
"""A request's start, its headers never ended: what a slowloris client sends, then waits."""


def half_request(port: int, peer: str = "127.0.0.1") -> socket.socket:
    """A connection from `peer` that has sent half a request's headers, and sends no more."""
    sock = socket.socket()
    sock.bind((peer, 0))
    sock.settimeout(ANSWER_S)
    sock.connect(("127.0.0.1", port))
    sock.sendall(HALF_REQUEST)
    return sock


def until_closed(sock: socket.socket, within: float = ANSWER_S) -> bytes:
    """Everything the server sends on `sock` before it closes it (a reset counts as closed); raises
    `TimeoutError` if it is still open after `within` seconds without a byte."""
    sock.settimeout(within)
    received = []
    try:
        while chunk := sock.recv(65536):
            received.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(received)


def masked(text: str) -> bytes:
    """`text` as one masked WebSocket text frame, as a client sends it."""
    data = text.encode()
    mask = os.urandom(4)
    size = len(data)
    head = bytes([0x81, 0x80 | size]) if size < 126 else bytes([0x81, 0x80 | 126]) + struct.pack(">H", size)
    return head + mask + bytes(byte ^ mask[i % 4] for i, byte in enumerate(data))


class NeverReads:
    """A WebSocket client on a bare socket with a small receive buffer, that reads only its handshake
    (so it answers no ping) and has reset task 0 of split train."""

    def __init__(self, port: int, peer: str = "127.0.0.1") -> None:
        self.socket = socket.socket()
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.socket.bind((peer, 0))
        self.socket.settimeout(ANSWER_S)
        self.socket.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.socket.sendall(
            f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += self.socket.recv(1)
        assert answer.startswith(b"HTTP/1.1 101"), answer
        self.socket.sendall(masked(json.dumps({"type": "reset", "data": {"split": "train", "index": 0}})))
        self.socket.settimeout(0.05)

    def send(self, frame: dict[str, object]) -> bool:
        """Send one frame; whether the server still took it in (a full socket times out, a closed one
        resets)."""
        try:
            self.socket.sendall(masked(json.dumps(frame)))
        except OSError:
            return False
        return True

    def ask_for_state(self) -> None:
        """One `state` frame, unless the server no longer takes them in."""
        self.send({"type": "state"})

    def go_away(self) -> None:
        """Close with a reset, unread answers and all, as the socket of a killed process does."""
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            self.socket.close()
