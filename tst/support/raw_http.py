"""HTTP over a bare socket, as a client that does not play by the rules sends it: a request's head
alone, a body sent chunk after chunk for as long as the server takes it, the answer read to the close."""

from __future__ import annotations

import select
import socket

ANSWER_S = 10.0


def request_head(path: str, *headers: str) -> bytes:
    """A POST's head for `path` on loopback, with `headers` ("Name: value") after the usual ones."""
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunked(data: bytes) -> bytes:
    """`data` as one chunk of a chunked body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def sent_until_answered(sock: socket.socket, chunk: bytes, most: int) -> int:
    """Send `chunk` after `chunk` until the server answers or stops taking them (for `ANSWER_S`), at
    most `most` bytes; how many were sent."""
    sent = 0
    while sent < most:
        readable, writable, _ = select.select([sock], [sock], [], ANSWER_S)
        if readable or not writable:
            break
        try:
            sock.sendall(chunk)
        except OSError:  # the server closed: it has answered
            break
        sent += len(chunk)
    return sent


def answer_of(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and body of the answer on `sock`, read until the server closes it (a reset
    after the answer counts as its close); raises `TimeoutError` past `ANSWER_S` without a byte."""
    sock.settimeout(ANSWER_S)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in header_lines)
    return int(status_line.split()[1]), headers, body
