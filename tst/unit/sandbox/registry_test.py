"""Which provider a server's episodes get: the one asked for, and a warm pool only for Docker."""

from __future__ import annotations

import re

import pytest

from agent_env.sandbox import LocalSandboxProvider, SandboxConfig
from agent_env.sandbox._registry import server_provider


def test_a_warm_pool_asked_of_a_local_sandbox_is_an_error_that_says_what_to_do() -> None:
    with pytest.raises(ValueError, match=re.escape("(--warm 2) is for the docker sandbox")) as refused:
        server_provider("local", SandboxConfig(), warm=2)

    assert "add --sandbox docker, or leave --warm out" in str(refused.value)


def test_a_bundle_s_warm_pool_is_left_unused_when_it_is_served_with_the_local_sandbox() -> None:
    provider = server_provider("local", SandboxConfig(provider="docker", warm=4))

    assert isinstance(provider, LocalSandboxProvider)


def test_a_warm_pool_is_a_count_of_containers_the_bundle_checks() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        SandboxConfig(provider="docker", warm=-1)


@pytest.mark.parametrize("warm", [-1, 2.5, True])
def test_a_warm_pool_of_no_whole_number_of_containers_is_refused_saying_what_it_takes(warm: object) -> None:
    with pytest.raises(
        ValueError, match=re.escape(f"--warm is a number of containers, 0 or more, got {warm!r}")
    ):
        server_provider("docker", SandboxConfig(provider="docker"), warm=warm)  # type: ignore[arg-type]
