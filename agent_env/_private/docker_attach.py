"""docker-py's attach socket: the socket beneath `exec_start(socket=True)`, and the frames read off it.

The docker sandbox feeds the task's files to `tar` on an exec's stdin, then half-closes it to end
tar's input. docker-py documents what `exec_start(socket=True)` returns only as "the connection
socket"; over a local engine it is a `socket.SocketIO`, whose socket, needed to half-close, is its
`_sock` (private to CPython's socket module). Reading the exec's output back, multiplexed into
frames of stdout and stderr, is `docker.utils.socket.frames_iter`, which docker-py does not document.
The Docker SDK is the `docker` extra, imported only when used.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any


def raw_socket(attached: Any) -> socket.socket:
    """The socket beneath what `exec_start(..., socket=True)` returned (itself, when it is one)."""
    beneath: socket.socket = getattr(attached, "_sock", attached)
    return beneath


def output_chunks(attached: Any) -> Iterator[bytes]:
    """What the exec writes to stdout and stderr, chunk by chunk as it comes, until it ends (no TTY)."""
    from docker.utils.socket import frames_iter

    for _, chunk in frames_iter(attached, tty=False):
        yield chunk
