"""A user can install the distribution: the wheel and the sdist build, carry the license, and the wheel
installed with the `trl` extra into a clean virtualenv runs `agent-env` away from the checkout.

The build uses the locked setuptools (`--no-isolation`), so it is the same build on every machine; the
clean virtualenv takes the wheel's requirements from the package index, constrained to the lock's
versions, wheels only, so what it gets does not depend on the day it runs. uv installs them (the
lock's, as `make install` does): the same resolution of the wheel's metadata as pip's, in seconds
where pip takes a minute or two.
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tools import lockfile

ROOT = lockfile.ROOT
EXAMPLE = ROOT / "examples" / "wharf"
# What `python -m venv` puts into a new environment itself, before anything is installed.
VENV_OWN = {"pip", "setuptools"}

pytestmark = [pytest.mark.needs("package_index"), pytest.mark.timeout(900)]


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path


@dataclass(frozen=True)
class Installed:
    folder: Path
    work: Path

    def run(self, program: str, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        """A program of the virtualenv, run from a folder outside the checkout, nothing of it on the path."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return subprocess.run(
            [str(self.folder / "bin" / program), *args],
            cwd=self.work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    return Built(wheel, sdist)


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    folder = tmp_path_factory.mktemp("clean") / "venv"
    venv.create(folder, with_pip=True)
    pins = folder.parent / "locked.txt"
    pins.write_text("".join(f"{name}=={version}\n" for name, version in lockfile.locked().items()))
    work = tmp_path_factory.mktemp("elsewhere")
    clean = Installed(folder, work)
    wanted = f"{built.wheel}[trl]"
    uv_install = [sys.executable, "-m", "uv", "pip", "install", "--system-certs", "--only-binary", ":all:"]
    done = subprocess.run(
        [*uv_install, "--python", str(clean.folder / "bin" / "python"), "--constraint", str(pins), wanted],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return clean


def test_the_wheel_and_the_sdist_carry_the_apache_license(built: Built):
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    with zipfile.ZipFile(built.wheel) as wheel:
        info = next(n.split("/")[0] for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(wheel.read(f"{info}/METADATA"))
        shipped = wheel.read(f"{info}/licenses/LICENSE").decode("utf-8")
    with tarfile.open(built.sdist) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        member = sdist.extractfile(f"{top}/LICENSE")
        assert member is not None
        in_sdist = member.read().decode("utf-8")

    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert (metadata["License-Expression"], metadata.get_all("License-File")) == ("Apache-2.0", ["LICENSE"])
    assert shipped == license_text
    assert in_sdist == license_text


def test_the_wheel_carries_the_viewers_page(built: Built):
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())

    page = {f"agent_env/view/static/{name}" for name in ("index.html", "view.js", "view.css")}
    assert page <= names


def test_the_wheel_installs_with_the_trl_extra_at_the_locked_versions(installed: Installed):
    listed = installed.run("python", "-m", "pip", "list", "--format", "json")
    versions = {canonicalize_name(p["name"]): p["version"] for p in json.loads(listed.stdout)}
    locked = lockfile.locked()
    brought = {n: v for n, v in versions.items() if n not in VENV_OWN | {"agentenv-framework"}}

    assert versions["agentenv-framework"] == "0.1.0"
    assert {"openenv", "datasets", "httpx", "fastapi", "uvicorn"} <= brought.keys()
    assert {n: v for n, v in brought.items() if locked.get(n) != v} == {}
    assert "torch" not in brought and "trl" not in brought


def test_agent_env_help_runs_from_the_installed_wheel(installed: Installed):
    done = installed.run("agent-env", "--help")

    assert done.returncode == 0, done.stderr
    assert all(command in done.stdout for command in ("check", "tasks", "play", "replay", "serve", "view"))


def test_agent_env_check_from_the_installed_wheel_passes_the_example_bundle(installed: Installed):
    shutil.copytree(EXAMPLE, installed.work / "wharf", dirs_exist_ok=True)

    done = installed.run("agent-env", "check", "wharf")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("wharf: ok: 2 envs")


def test_the_installed_wheel_finds_its_parts_by_their_entry_points_and_replays_the_bash_tasks(
    installed: Installed,
):
    shutil.copytree(EXAMPLE, installed.work / "wharf", dirs_exist_ok=True)

    done = installed.run("agent-env", "replay", "wharf")

    assert done.returncode == 0, done.stderr
    assert "dock+bash" in done.stdout
    assert done.stdout.rstrip().endswith("44 of 44 tasks scored as their reference play expects")


def test_the_installed_wheel_imports_the_trainers_side_from_its_own_site_packages(installed: Installed):
    done = installed.run(
        "python", "-c", "import agent_env, agent_env.training.trl; print(agent_env.__file__)", timeout_s=300
    )

    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(installed.folder)
