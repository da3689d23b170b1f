"""A task's compose file: accepted when its only service is `main`, built from the task's Dockerfile
with nothing that changes what the agent reaches; refused otherwise, naming what is not supported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_env.harbor._loader import read_harbor
from tst.support.harbor_tasks import write_task

# PyYAML reads compose files: it comes with the [openenv] extra.
pytestmark = pytest.mark.needs("docker_installed")

DOCKERFILE = "FROM agent-env-sandbox:latest\nWORKDIR /app\n"


def with_compose(tmp_path: Path, compose: str, name: str = "docker-compose.yaml") -> Path:
    return write_task(
        tmp_path,
        "task",
        "[environment]\nallow_internet = false\n",
        files={"environment/Dockerfile": DOCKERFILE, f"environment/{name}": compose},
    )


@pytest.mark.parametrize("name", ["docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml"])
@pytest.mark.parametrize(
    "compose",
    [
        "services:\n  main:\n    build: .\n",
        "services:\n  main:\n    build:\n      context: ./\n      dockerfile: Dockerfile\n",
        "services:\n  main:\n    init: true\n",  # Harbor's own base builds the Dockerfile
        "services:\n  main:\n",
        "version: '3.8'\nname: task\nx-common: &c {tty: true}\nservices:\n"
        "  main:\n    <<: *c\n    build: .\n    image: task:latest\n    container_name: task\n",
    ],
)
def test_a_compose_file_that_only_builds_main_from_the_dockerfile_loads_the_task_from_its_dockerfile(
    tmp_path: Path, compose: str, name: str
):
    read, problems = read_harbor(with_compose(tmp_path, compose, name), build=False)

    assert problems == [] and read is not None
    assert [task.id for task in read.splits["train"]] == ["task"]


@pytest.mark.parametrize(
    ("compose", "expected"),
    [
        (
            "services:\n  main:\n    build: .\n  db:\n    image: postgres:16\n  cache:\n    image: redis\n",
            [
                "names service(s) 'db', 'cache': a task here is one container, 'main', built from "
                "environment/Dockerfile. Do what they do in it, or run the task with Harbor"
            ],
        ),
        (
            "services:\n  main:\n    build: .\n    ports: ['8080:80']\n    volumes: ['/:/host']\n"
            "    privileged: true\n",
            [
                "service main's 'ports' is not supported: a container here takes no connection from outside",
                "service main's 'volumes' is not supported: a container here mounts nothing of the host: "
                "COPY what it needs in the Dockerfile",
                "service main's 'privileged' is not supported: a container here keeps only the capabilities "
                "root needs to install and own files",
            ],
        ),
        (
            "services:\n  main:\n    network_mode: host\n    environment: [A=1]\n",
            [
                "service main's 'network_mode' is not supported: write task.toml's network_mode",
                "service main's 'environment' is not supported: write the variables in task.toml's "
                "[environment] env",
            ],
        ),
        (
            "services:\n  main:\n    build: .\nnetworks:\n  outside: {}\n",
            [
                "its top-level 'networks' is not supported: a task here is one container, 'main', on no "
                "volume or network of compose's; remove it"
            ],
        ),
        (
            "services:\n  main:\n    build:\n      context: ..\n      dockerfile: other.Dockerfile\n"
            "      args: {X: 1}\n",
            [
                "service main's 'build.args' is not supported: the image is environment/Dockerfile built as "
                "it is; remove it",
                "service main is built from '..': only environment/ itself (context '.') is built here",
                "service main is built from 'other.Dockerfile': only environment/Dockerfile is built here; "
                "rename it Dockerfile",
            ],
        ),
        (
            "services: [main]\n",
            ["names no services: write `services: {main: {build: .}}`, or remove the file"],
        ),
        ("services:\n  main: [\n", ["not valid YAML ("]),
    ],
)
def test_any_other_compose_file_is_refused_naming_what_in_it_is_not_supported(
    tmp_path: Path, compose: str, expected: list[str]
):
    read, problems = read_harbor(with_compose(tmp_path, compose), build=False)

    assert read is None
    said = [str(p).removeprefix("environment/docker-compose.yaml: ") for p in problems]
    assert len(said) == len(expected)
    assert all(one.startswith(start) for one, start in zip(said, expected, strict=True))


def test_without_pyyaml_a_compose_file_is_a_problem_saying_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if it were not installed

    read, problems = read_harbor(with_compose(tmp_path, "services:\n  main:\n    build: .\n"), build=False)

    assert read is None
    assert [str(p) for p in problems] == [
        "environment/docker-compose.yaml: a compose file is read with PyYAML, not installed here: pip "
        "install pyyaml (the [docker] extra has it), or remove the file and keep environment/Dockerfile"
    ]
