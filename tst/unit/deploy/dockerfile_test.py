"""deploy/Dockerfile, read by buildkit's own parser: what the image runs, as whom, and from what."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import dockerfile
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from agent_env._loading import load_bundle
from tools.lockfile import LOCK, locked
from tst.unit.deploy._deploy import (
    HEALTHCHECK,
    INIT,
    ROOT,
    documented_serve_command,
    instruction,
    instructions,
)

pytestmark = pytest.mark.needs("dev_installed")


def test_the_dockerfile_parses_and_every_instruction_is_one_docker_knows():
    parsed = instructions()

    assert parsed[0].cmd == "FROM"
    assert parsed[0].value[0].startswith("python:3.11-slim")
    assert {command.cmd.lower() for command in parsed} <= set(dockerfile.all_cmds())


@pytest.mark.parametrize(
    "text",
    ["FROM python:3.11-slim\nRUN <<EOF\necho\n", "FROM python:3.11-slim\nENV PYTHONUNBUFFERED\n"],
    ids=["an unterminated heredoc", "an ENV without its value"],
)
def test_the_parser_rejects_a_dockerfile_buildkit_would_refuse(tmp_path: Path, text: str):
    broken = tmp_path / "Dockerfile"
    broken.write_text(text)

    with pytest.raises(dockerfile.GoParseError):
        dockerfile.parse_file(str(broken))


def test_an_entrypoint_whose_json_is_broken_reads_as_shell_form_which_the_exec_form_check_refuses():
    (_, entrypoint) = dockerfile.parse_string('FROM python:3.11-slim\nENTRYPOINT ["tini", "--",\n')

    assert entrypoint.cmd == "ENTRYPOINT"
    assert not entrypoint.json


def test_the_image_runs_as_a_numeric_user_that_is_not_root():
    user, _, group = instruction("USER").value[0].partition(":")

    assert user.isdigit() and int(user) != 0
    assert group.isdigit() and int(group) != 0


def test_the_entrypoint_is_exec_form_with_tini_passing_sigterm_to_the_server():
    entrypoint = instruction("ENTRYPOINT")

    assert entrypoint.json
    assert entrypoint.value[: len(INIT)] == INIT
    assert instruction("STOPSIGNAL").value == ("SIGTERM",)
    assert not [command for command in instructions() if command.cmd == "CMD"]


def test_the_entrypoint_runs_exactly_the_command_the_deploying_guide_documents():
    command = list(instruction("ENTRYPOINT").value[len(INIT) :])

    assert command == documented_serve_command()
    assert command[:3] == ["agent-env", "serve", "/bundle"]


def test_the_healthcheck_is_exec_form_and_runs_the_health_check_script_on_health():
    check = instruction("HEALTHCHECK")
    copied = {command.value[-1]: command.value[0] for command in instructions() if command.cmd == "COPY"}

    assert check.json
    assert check.value[:2] == ("CMD", "python")
    assert copied[check.value[2]] == HEALTHCHECK.relative_to(ROOT).as_posix()
    assert urlsplit(check.value[3]).path == "/health"


def test_everything_the_image_copies_is_in_the_repository_and_the_default_bundle_loads():
    bundle_arg = instruction("ARG").value[0]
    name, _, default = bundle_arg.partition("=")
    sources = [
        source.replace(f"${{{name}}}", default)
        for command in instructions()
        if command.cmd == "COPY"
        for source in command.value[:-1]
    ]

    assert all((ROOT / source).exists() for source in sources), sources
    assert load_bundle(ROOT / default).name


def test_the_image_installs_the_servers_extras_at_the_versions_the_lock_pins(tmp_path: Path):
    (install,) = [command.value[0] for command in instructions() if "--constraint" in command.value[0]]
    strip = install.split("&&")[0].split(">")[0].replace("/src/requirements/dev.lock", str(LOCK))
    made = subprocess.run(["sh", "-c", strip], capture_output=True, text=True, check=True).stdout
    pins = [Requirement(line) for line in made.splitlines() if line and not line.lstrip().startswith("#")]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    assert {canonicalize_name(pin.name): str(pin.specifier)[2:] for pin in pins} == locked()
    assert all(str(pin.specifier).startswith("==") for pin in pins)
    assert '"/src[openenv,docker]"' in install
    assert {"openenv", "docker"} <= set(extras)
