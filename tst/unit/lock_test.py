"""The dev/test install is the lock, the lock is made from pyproject.toml and the pins, and the package
itself pins nobody.

requirements/dev.lock is what `make install` installs on every machine (so two machines a month apart
test the same set), and `make lock`, which the weekly workflow runs, is the one way it changes.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tools import lockfile, notices

pytestmark = pytest.mark.needs("dev_installed")

WORKFLOWS = notices.ROOT / ".github" / "workflows"
PROJECT = tomllib.loads((notices.ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
TRAINERS_OWN = ("torch", "trl")


def declared_requirements() -> list[Requirement]:
    """The base's requirements and every extra's, the package's own self-references aside."""
    texts = [
        *PROJECT["dependencies"],
        *(t for extra in PROJECT["optional-dependencies"].values() for t in extra),
    ]
    return [r for r in map(Requirement, texts) if canonicalize_name(r.name) != notices.SELF]


def pins() -> list[Requirement]:
    lines = lockfile.PINS.read_text(encoding="utf-8").splitlines()
    return [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]


def workflow(name: str) -> dict[Any, Any]:
    parsed: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    return parsed


def run_steps(parsed: dict[Any, Any]) -> list[str]:
    return [step["run"].strip() for job in parsed["jobs"].values() for step in job["steps"] if "run" in step]


def make(*args: str, **environment: str) -> subprocess.CompletedProcess[str]:
    """make, run in the checkout with the Makefile's variables from `environment` alone."""
    makefile_own = ("PYTHON", "VENV", "MAKEFLAGS", "TORCH_WHEELS", "LOCAL_TORCH_WHEELS")
    inherited = {k: v for k, v in os.environ.items() if k not in makefile_own}
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=notices.ROOT,
        env={**inherited, **environment},
        capture_output=True,
        text=True,
        timeout=30,
    )


def make_dry_run(target: str, **environment: str) -> str:
    done = make("--dry-run", target, PYTHON=environment.pop("PYTHON", sys.executable), **environment)
    assert done.returncode == 0, done.stderr
    return done.stdout.replace("\\\n", " ")  # a recipe's continued lines, as the one command they are


def test_every_locked_distribution_is_installed_at_its_locked_version():
    locked = lockfile.locked()
    installed = {name: _installed_version(name) for name in locked}

    assert len(locked) > 100
    assert {n: v for n, v in installed.items() if v != locked[n]} == {}


def _installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_the_lock_meets_every_requirement_pyproject_declares_and_every_pin():
    locked = lockfile.locked()
    requirements = [*declared_requirements(), *pins()]

    unmet = [
        f"{r} (locked: {locked.get(canonicalize_name(r.name), 'not at all')})"
        for r in requirements
        if (r.marker is None or r.marker.evaluate({"extra": ""}))
        and not r.specifier.contains(locked.get(canonicalize_name(r.name), "0.dev0"), prereleases=True)
    ]

    assert requirements
    assert unmet == [], "run `make lock`"


def test_the_lock_pins_torchs_cpu_build_and_the_trl_the_pins_name():
    locked = lockfile.locked()

    assert locked["torch"] == "2.13.0+cpu"
    assert locked["trl"].startswith("1.16.")


def test_the_packages_own_requirements_are_ranges_that_pin_no_user():
    exact = [
        str(r)
        for r in declared_requirements()
        for spec in r.specifier
        if spec.operator == "===" or (spec.operator == "==" and not spec.version.endswith(".*"))
    ]

    assert declared_requirements()
    assert exact == []


def test_neither_torch_nor_trl_is_declared_by_the_package_only_pinned_by_the_dev_install():
    assert [r.name for r in declared_requirements() if r.name in TRAINERS_OWN] == []
    assert sorted(canonicalize_name(r.name) for r in pins()) == sorted(TRAINERS_OWN)


def test_make_lock_resolves_every_extra_with_the_pins_then_installs_it_and_writes_the_notices():
    commands = make_dry_run("lock")
    compile_line = next(line for line in commands.splitlines() if "pip compile" in line)

    assert sorted(PROJECT["optional-dependencies"]) == sorted(
        word
        for prev, word in zip(compile_line.split(), compile_line.split()[1:], strict=False)
        if prev == "--extra"
    )
    assert "pyproject.toml" in compile_line
    assert str(lockfile.PINS.relative_to(notices.ROOT)) in compile_line
    assert f"--output-file {lockfile.LOCK.relative_to(notices.ROOT)}" in compile_line
    assert "--generate-hashes" in compile_line
    assert commands.index("uv pip install --system-certs --python") < commands.index("tools.notices --output")


def install_commands(python: str, commands: list[str]) -> list[str]:
    """What each of `make install`'s commands asks of `python`, checked to be that interpreter's."""
    assert all(c.startswith(f"{python} -m ") for c in commands), commands
    return [
        c.removeprefix(f"{python} -m ").replace(f"--python {python}", "--python PYTHON") for c in commands
    ]


def test_make_install_takes_uv_from_the_lock_then_installs_exactly_the_lock_with_hashes_then_the_package():
    commands = make_dry_run("install").splitlines()

    assert install_commands(sys.executable, commands) == [
        f"tools.lock_entries uv | {sys.executable} -m pip install --quiet --require-hashes --no-deps "
        "--only-binary :all: -r /dev/stdin",
        "uv pip install --system-certs --python PYTHON --require-hashes --only-binary :all: "
        f"--find-links {_torch_wheels(commands[1])} -r {lockfile.LOCK.relative_to(notices.ROOT)}",
        "uv pip install --system-certs --python PYTHON --no-deps --no-build-isolation --editable .",
        f"uv pip check --python PYTHON || {{ {_pip_check_advice(commands[3])}",
    ]


def test_the_lock_entry_make_install_takes_uv_from_is_uv_pinned_with_its_hashes():
    entry = subprocess.run(
        [sys.executable, "-m", "tools.lock_entries", "uv"], cwd=notices.ROOT, capture_output=True, text=True
    )

    assert entry.returncode == 0, entry.stderr
    assert entry.stdout.startswith(f"uv=={lockfile.locked()['uv']} \\\n")
    assert entry.stdout.count("--hash=sha256:") >= 1
    assert "==" not in entry.stdout.split("\n", 1)[1]


def test_a_lock_entry_the_lock_does_not_hold_is_an_error_that_says_to_run_make_lock():
    entry = subprocess.run(
        [sys.executable, "-m", "tools.lock_entries", "no-such-tool"],
        cwd=notices.ROOT,
        capture_output=True,
        text=True,
    )

    assert (entry.returncode, entry.stdout) == (1, "")
    assert "no-such-tool not in dev.lock: run make lock" in entry.stderr


@pytest.mark.parametrize("has_folder", [True, False], ids=["folder", "no folder"])
def test_make_install_takes_torch_from_the_machine_s_wheel_folder_if_it_has_one_else_from_pytorch_s_cpu_index(
    tmp_path: Path, has_folder: bool
):
    folder = tmp_path / "wheels"
    if has_folder:
        folder.mkdir()

    commands = make_dry_run("install", LOCAL_TORCH_WHEELS=str(folder)).splitlines()

    expected = str(folder) if has_folder else "https://download.pytorch.org/whl/cpu/torch/"
    assert _torch_wheels(commands[1]) == expected


def test_make_install_first_makes_the_projects_own_virtualenv_and_installs_into_it(tmp_path: Path):
    venv = tmp_path / "venv"
    commands = make("--dry-run", "install", VENV=str(venv)).stdout.replace("\\\n", " ").splitlines()

    assert commands[0] == f"python3 -m venv {venv}"
    assert len(install_commands(f"{venv}/bin/python", commands[1:])) == 4


def test_make_install_names_the_fix_when_the_environment_conflicts_with_the_lock():
    advice = _pip_check_advice(make_dry_run("install").splitlines()[3])

    assert "install into a virtualenv of its own: make install, with PYTHON unset" in advice


def test_a_target_run_before_make_install_says_to_run_make_install_first(tmp_path: Path):
    done = make("unit", VENV=str(tmp_path / "venv"))

    assert done.returncode != 0
    assert f"nothing is installed for {tmp_path / 'venv'}/bin/python: run make install first" in done.stderr
    assert not (tmp_path / "venv").exists()


def _pip_check_advice(command: str) -> str:
    return command.split("|| {", 1)[1].strip()


def _torch_wheels(command: str) -> str:
    words = command.split()
    return words[words.index("--find-links") + 1]


def test_the_weekly_lock_workflow_parses_and_runs_make_install_then_make_lock_then_opens_a_pull_request():
    parsed = workflow("lock.yml")
    triggers = parsed.get("on", parsed.get(True))  # YAML 1.1 reads a bare `on` as true
    steps = [step for job in parsed["jobs"].values() for step in job["steps"]]
    opened = next(
        step for step in steps if str(step.get("uses", "")).startswith("peter-evans/create-pull-request")
    )

    assert [entry["cron"] for entry in triggers["schedule"]]
    assert "workflow_dispatch" in triggers
    assert run_steps(parsed) == ["make install", "make lock"]
    assert opened["with"]["add-paths"].split() == ["requirements/dev.lock", "THIRD_PARTY_NOTICES.md"]


@pytest.mark.parametrize("name", ["ci.yml", "trl.yml"])
def test_the_test_workflows_install_from_the_lock(name: str):
    installs = [line for step in run_steps(workflow(name)) for line in step.splitlines() if "install" in line]

    assert installs[0] == "make install"
    assert [line for line in installs if "pip install" in line and "--upgrade" not in line] == []
