"""What `agent_env._private.docker_attach` expects of docker-py, where no engine is needed: `frames_iter`
reads an exec's output frames off the `socket.SocketIO` a local engine's attach returns, whose socket is
its `_sock`. tst/integration/sandbox/docker_attach_test.py checks, against an engine, that the attach
returns one."""

from __future__ import annotations

import inspect
import socket
import struct

import pytest
from docker.utils.socket import frames_iter

from agent_env._private.docker_attach import output_chunks, raw_socket

pytestmark = pytest.mark.needs("docker_installed")


def frame(stream: int, data: bytes) -> bytes:
    """One frame of Docker's attach stream: stream 1 is stdout, 2 stderr."""
    return struct.pack(">BxxxL", stream, len(data)) + data


def test_docker_py_attach_socket_still_has_sock_and_frames_iter() -> None:
    ours, engines = socket.socketpair()
    with ours, engines:
        attached = socket.SocketIO(ours, "rwb")

        assert attached._sock is ours
        assert list(inspect.signature(frames_iter).parameters) == ["socket", "tty"]


def test_docker_py_frames_iter_still_reads_stdout_and_stderr_frames_off_the_attach_until_it_ends() -> None:
    ours, engines = socket.socketpair()
    with ours, engines:
        attached = socket.SocketIO(ours, "rwb")
        raw_socket(attached).sendall(b"files")
        raw_socket(attached).shutdown(socket.SHUT_WR)
        engines.sendall(frame(1, b"tar: ") + frame(2, b"no space left"))
        engines.shutdown(socket.SHUT_WR)

        chunks = list(output_chunks(attached))

        assert chunks == [b"tar: ", b"no space left"]
        assert engines.recv(100) == b"files" and engines.recv(100) == b""
