"""deploy/healthcheck.py, the image's health check and the pods' probes, against a real server on loopback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent_env.openenv import TOKEN_VARIABLE, BackgroundServer, build_served_app
from agent_env.testing import FakeTask, fake_served
from tst.support.serving import Serve
from tst.unit.deploy._deploy import HEALTHCHECK

pytestmark = pytest.mark.needs("openenv_installed")

TOKEN = "pod-token_7"


def guarded(serve: Serve) -> BackgroundServer:
    return serve(build_served_app(fake_served({"train": [FakeTask("store")]}), token=TOKEN))


def check(url: str, token: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE}
    if token is not None:
        env[TOKEN_VARIABLE] = token
    return subprocess.run(
        [sys.executable, "-I", str(HEALTHCHECK), url], env=env, capture_output=True, text=True, timeout=30
    )


def test_the_check_passes_on_a_guarded_server_with_the_token_from_the_pods_environment(serve: Serve):
    server = guarded(serve)

    passed = check(f"{server.url}/health", TOKEN)

    assert passed.returncode == 0, passed.stderr


def test_the_check_fails_on_a_guarded_server_without_the_token_saying_it_was_refused(serve: Serve):
    server = guarded(serve)

    failed = check(f"{server.url}/health", None)

    assert failed.returncode == 1
    assert "answered 401" in failed.stderr and TOKEN_VARIABLE in failed.stderr


def test_the_check_passes_on_a_server_without_a_token(serve: Serve):
    server = serve({"train": [FakeTask("store")]})

    assert check(f"{server.url}/health", None).returncode == 0


def test_the_check_fails_when_nothing_answers(serve: Serve):
    server = guarded(serve)
    url = f"{server.url}/health"
    server.stop()

    failed = check(url, TOKEN)

    assert failed.returncode == 1
    assert "did not answer" in failed.stderr
