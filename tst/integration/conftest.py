"""The integration tier: every test here needs a Docker engine, and leaves no container and no process.

The sandbox image is built once per run when the engine lacks it (`.ci/run` builds it beforehand).
After each test, every container a sandbox made must be gone and every process the test started
must have ended; a test that leaves one behind fails, and what it left is removed so the next test
starts clean.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from agent_env.sandbox import DEFAULT_IMAGE, build_sandbox_image
from tst.integration._containers import sandbox_containers
from tst.support.waiting import child_processes, until

LEFTOVER_WAIT_S = 10.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tst/integration/" in item.nodeid:
            item.add_marker(pytest.mark.needs("docker_engine"))


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    import docker

    client = docker.from_env(timeout=60)
    for container in sandbox_containers(client):  # what an interrupted earlier run left
        client.api.remove_container(container, force=True)
    yield client
    client.close()


@pytest.fixture(scope="session")
def sandbox_image(docker_client: Any) -> str:
    """The default sandbox image, built into the engine if it is not there yet."""
    import docker.errors

    try:
        docker_client.images.get(DEFAULT_IMAGE)
    except docker.errors.ImageNotFound:
        build_sandbox_image(DEFAULT_IMAGE, client=docker_client)
    return DEFAULT_IMAGE


@pytest.fixture(autouse=True)
def nothing_left_running(docker_client: Any, sandbox_image: str) -> Iterator[None]:
    """Fail a test that leaves a sandbox container or a child process behind, then clear them."""
    before = child_processes()
    yield
    containers_gone = until(lambda: sandbox_containers(docker_client) == [], LEFTOVER_WAIT_S)
    processes_gone = until(lambda: child_processes() <= before, LEFTOVER_WAIT_S)
    left = sandbox_containers(docker_client)
    for container in left:
        with contextlib.suppress(Exception):
            docker_client.api.remove_container(container, force=True)
    stray = child_processes() - before
    assert containers_gone, f"containers left running: {[c[:12] for c in left]}"
    assert processes_gone, f"processes left running: {sorted(stray)}"
