"""Bodies of any size, sent to `agent-env serve` with no token set: none is read past 1 MiB.

A 1 GB POST to the Task API took the server to 3.3 GiB, and the 422 that answered it echoed the
whole body back. Here 256 MiB of JSON (one string as long as that), declared by its Content-Length
or sent in chunks, is offered to a server process; the server answers 413 once it knows the body is
over the cap (at once, or once its chunks pass it), reads no more, and its peak memory (`VmHWM`)
stays where it was.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_env.openenv._bodies import MAX_BODY_BYTES
from tst.support.cli_server import agent_env_serve
from tst.support.raw_http import answer_of, chunked, request_head, sent_until_answered
from tst.support.wharf import WHARF

ANSWER_S = 10.0
OFFERED = 256 << 20
"""The body each request offers: 256 MiB."""
TAKEN_MOST = OFFERED // 2
"""The most a client may have pushed into its socket before the answer: what the kernel's buffers
take (tens of MiB), far less than the body."""
GREW_MOST_MIB = 32.0
CHUNK = b"x" * (1 << 16)
OPENING = b'{"split": "'
"""The body's start: a JSON object whose one string runs on for the rest of it."""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    with agent_env_serve(WHARF, log=tmp_path / "serve.log", tmpdir=tmp_path) as (process, url):
        yield process, int(url.rsplit(":", 1)[1])


def peak_mib(pid: int) -> float:
    found = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    assert found, f"no VmHWM for process {pid}"
    return int(found.group(1)) / 1024


def offer(port: int, head: bytes, first: bytes, chunk: bytes) -> tuple[int, bytes, int]:
    """Send `head`, `first`, then `chunk` after `chunk` (up to `OFFERED` bytes) until the server
    answers; its status, its body and how many bytes were sent."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_S)
    try:
        sock.sendall(head + first)
        sent = sent_until_answered(sock, chunk, OFFERED)
        status, _, body = answer_of(sock)
    finally:
        sock.close()
    return status, body, sent


def test_a_256_mib_body_declared_or_chunked_is_refused_413_unread_and_the_server_does_not_grow(
    served: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = served
    before = peak_mib(process.pid)

    declared = offer(
        port, request_head("/wharf/task", f"Content-Length: {len(OPENING) + OFFERED}"), OPENING, CHUNK
    )
    streamed = offer(
        port, request_head("/wharf/task", "Transfer-Encoding: chunked"), chunked(OPENING), chunked(CHUNK)
    )
    grew = peak_mib(process.pid) - before

    for status, body, sent in (declared, streamed):
        assert status == 413, body[:300]
        assert json.loads(body) == {
            "detail": f"the request's body is over {MAX_BODY_BYTES} bytes, the most this server reads"
        }
        assert sent < TAKEN_MOST, f"the server took {sent} bytes"
    assert grew < GREW_MOST_MIB, f"the server's peak memory grew by {grew:.0f} MiB"
