"""What `agent_env._private.docker_attach` expects of docker-py against a real engine: the attach socket
of an exec is a `socket.SocketIO` over the connection's socket, its `_sock`."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from agent_env._private.docker_attach import output_chunks, raw_socket
from agent_env.sandbox import DockerSandboxProvider, SandboxConfig


def test_docker_py_exec_start_socket_still_answers_a_socket_io_whose_sock_half_closes_stdin(
    docker_client: Any, sandbox_image: str
) -> None:
    settings = SandboxConfig(provider="docker", image=sandbox_image)
    sandbox = asyncio.run(DockerSandboxProvider(settings, client=docker_client).create({}))
    try:
        api = sandbox.container.client.api
        execution = api.exec_create(sandbox.container.id, ["cat"], stdin=True)
        attached = api.exec_start(execution["Id"], socket=True)
        try:
            beneath = raw_socket(attached)
            beneath.sendall(b"through the socket beneath")
            beneath.shutdown(socket.SHUT_WR)
            echoed = b"".join(output_chunks(attached))
        finally:
            attached.close()
    finally:
        asyncio.run(sandbox.teardown())

    assert isinstance(attached, socket.SocketIO)
    assert isinstance(beneath, socket.socket)
    assert echoed == b"through the socket beneath"
