"""The docker sandbox where no engine is needed: choosing it, its settings, and the errors without one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_env._error_types import BundleError, SandboxUnavailableError
from agent_env._loading import load_bundle
from agent_env.sandbox import (
    ImageBuildError,
    SandboxConfig,
    _docker_image as image_module,
    _registry as registry,
    build_sandbox_image,
    sandbox_provider,
)
from tst.support.bundles import TOML, make_bundle
from tst.support.wharf import WHARF

NO_ENGINE = "unix:///nonexistent/docker.sock"
SCRIPT = Path(sys.executable).parent / "agent-env"
STARTUP_S = 60.0


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    registry._docker_provider.cache_clear()
    yield
    registry._docker_provider.cache_clear()


@pytest.mark.needs("docker_installed")
def test_choosing_the_docker_sandbox_without_an_engine_fails_at_once_naming_how_to_start_one(
    no_engine: None,
) -> None:
    with pytest.raises(SandboxUnavailableError) as caught:
        sandbox_provider("docker", SandboxConfig(provider="docker"))

    message = str(caught.value)
    assert f"needs a Docker engine, and none answered at {NO_ENGINE}" in message
    assert "Start one" in message and "DOCKER_HOST" in message and "--sandbox local" in message


@pytest.mark.needs("docker_installed", "openenv_installed")
def test_a_server_of_a_bundle_with_the_docker_sandbox_fails_when_it_is_built_not_at_its_first_episode(
    no_engine: None,
) -> None:
    from agent_env.openenv import build_app

    with pytest.raises(SandboxUnavailableError, match="needs a Docker engine"):
        build_app(WHARF, sandbox="docker")


@pytest.mark.needs("docker_installed", "openenv_installed")
def test_agent_env_serve_with_the_docker_sandbox_and_no_engine_exits_2_before_listening() -> None:
    done = subprocess.run(
        [str(SCRIPT), "serve", str(WHARF), "--port", "0", "--sandbox", "docker"],
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
        check=False,
        env={"PATH": str(Path(sys.executable).parent), "DOCKER_HOST": NO_ENGINE},
    )

    assert done.returncode == 2
    assert done.stderr.startswith("error: the docker sandbox needs a Docker engine")
    assert "serving" not in done.stdout


def test_without_the_docker_sdk_the_error_names_the_docker_extra(
    no_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)

    with pytest.raises(SandboxUnavailableError, match=r"pip install 'agentenv-framework\[docker\]'"):
        sandbox_provider("docker")


def test_a_bundle_chooses_the_docker_sandbox_its_image_and_limits_in_bundle_toml(tmp_path: Path) -> None:
    limits = (
        'image = "shipyard:2"\ncpus = 0.5\nmemory_mb = 256\npids_limit = 64\nuser = "0:0"\nwork_mb = 32\n'
    )
    toml = TOML + '\n[sandbox]\nprovider = "docker"\n' + limits
    bundle = load_bundle(make_bundle(tmp_path / "b", toml=toml))

    settings = bundle.task("train", 0).sandbox_settings

    assert settings == SandboxConfig(
        provider="docker", image="shipyard:2", cpus=0.5, memory_mb=256, pids_limit=64, user="0:0", work_mb=32
    )


def test_docker_limits_out_of_range_in_bundle_toml_are_each_reported_with_their_field(tmp_path: Path) -> None:
    toml = TOML + (
        '\n[sandbox]\nprovider = "docker"\ncpus = 0\nmemory_mb = 1\npids_limit = 2\nimage = ""\n'
        'user = "agent"\nwork_mb = 0\nisolation = "jail"\n'
    )

    with pytest.raises(BundleError) as caught:
        load_bundle(make_bundle(tmp_path / "b", toml=toml))

    problems = [str(p) for p in caught.value.problems]
    fields = ("cpus", "memory_mb", "pids_limit", "image", "user", "work_mb", "isolation")
    for field in (f"sandbox.{name}" for name in fields):
        assert sum(field in p for p in problems) == 1, problems


def test_an_unknown_sandbox_provider_in_bundle_toml_names_both_providers(tmp_path: Path) -> None:
    toml = TOML + '\n[sandbox]\nprovider = "dockr"\n'

    with pytest.raises(BundleError, match=r"unknown sandbox provider 'dockr'.*docker"):
        load_bundle(make_bundle(tmp_path / "b", toml=toml))


def test_building_the_image_without_apt_get_says_what_it_needs_and_how_to_do_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(image_module.shutil, "which", lambda name: None)

    with pytest.raises(ImageBuildError, match=r"needs apt-get and dpkg-deb.*\[sandbox\] image"):
        build_sandbox_image("agent-env-sandbox:never", client=object())
