"""A task's compose file (environment/docker-compose.yaml and its other names): accepted when it says
no more than the Dockerfile does, refused, naming what in it is not supported, otherwise.

Harbor starts a task's container with docker compose, from a base of its own that builds service
`main` from environment/Dockerfile; a task's compose file is laid over it. One whose only service is
`main`, built (if it says so) from `.` and `Dockerfile`, with nothing that changes what the agent
reaches or runs beside (ports, volumes, networks, privileges, other services), is that same
container: the loader builds the Dockerfile, as without it. The file is read with PyYAML, which the
[docker] extra installs (Harbor tasks need it anyway); without it, a compose file is a problem saying so.
"""

from __future__ import annotations

import posixpath
from typing import Any

from agent_env._extras import installed

COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
"""The names docker compose reads, in its order."""
_TOP_LEVEL = {"services", "version", "name"}
_HARMLESS = {"build", "image", "container_name", "init", "tty", "stdin_open"}
"""Service keys that change nothing the agent reaches: the image's build, names, the terminal."""
_FIXES = {
    "environment": "write the variables in task.toml's [environment] env",
    "env_file": "write the variables in task.toml's [environment] env",
    "working_dir": "write task.toml's [environment] workdir",
    "user": "commands run as root here",
    "ports": "a container here takes no connection from outside",
    "expose": "a container here takes no connection from outside",
    "volumes": "a container here mounts nothing of the host: COPY what it needs in the Dockerfile",
    "network_mode": "write task.toml's network_mode",
    "networks": "write task.toml's network_mode",
    "privileged": "a container here keeps only the capabilities root needs to install and own files",
    "cap_add": "a container here keeps only the capabilities root needs to install and own files",
    "devices": "a container here gets no device of the host",
    "cpus": "write task.toml's [environment] cpus",
    "mem_limit": "write task.toml's [environment] memory_mb",
    "deploy": "write task.toml's [environment] cpus and memory_mb",
    "command": "the container's command is this project's own (the shell the agent's bash runs in)",
    "healthcheck": "write task.toml's [environment] healthcheck",
    "depends_on": "a task here is one container, 'main'",
}
_BUILD_KEYS = {"context", "dockerfile"}


def compose_problems(text: str) -> list[str]:
    """What in the compose file `text` is not supported, each with what to do; none if it only builds
    `main` from the task's Dockerfile."""
    if not installed("yaml"):
        return [
            "a compose file is read with PyYAML, not installed here: pip install pyyaml (the [docker] "
            "extra has it), or remove the file and keep environment/Dockerfile"
        ]
    import yaml

    try:
        compose: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [f"not valid YAML ({' '.join(str(exc).split())}): fix its syntax"]
    if not isinstance(compose, dict) or not isinstance(compose.get("services"), dict):
        return ["names no services: write `services: {main: {build: .}}`, or remove the file"]
    problems = [
        f"its top-level '{key}' is not supported: a task here is one container, 'main', on no volume or "
        "network of compose's; remove it"
        for key in compose
        if key not in _TOP_LEVEL and not str(key).startswith("x-")
    ]
    services = compose["services"]
    others = [str(name) for name in services if name != "main"]
    if others:
        problems.append(
            f"names service(s) {', '.join(repr(n) for n in others)}: a task here is one container, "
            "'main', built from environment/Dockerfile. Do what they do in it, or run the task with Harbor"
        )
    main = services.get("main") or {}
    if not isinstance(main, dict):
        return [*problems, "service 'main' is not a mapping of its settings: fix it, or remove the file"]
    for key in main:
        if key not in _HARMLESS and not str(key).startswith("x-"):
            fix = _FIXES.get(str(key), "remove it")
            problems.append(f"service main's '{key}' is not supported: {fix}")
    problems.extend(_build_problems(main.get("build")))
    return problems


def _build_problems(build: Any) -> list[str]:
    """What in service main's `build` is not the task's environment/Dockerfile built as it is."""
    if build is None:
        return []  # Harbor's own base builds environment/Dockerfile
    if isinstance(build, str):
        build = {"context": build}
    if not isinstance(build, dict):
        return ["service main's 'build' is neither a folder nor a mapping: write `build: .`"]
    problems = [
        f"service main's 'build.{key}' is not supported: the image is environment/Dockerfile built as it "
        "is; remove it"
        for key in build
        if key not in _BUILD_KEYS
    ]
    context = str(build.get("context", "."))
    if posixpath.normpath(context) != ".":
        problems.append(
            f"service main is built from '{context}': only environment/ itself (context '.') is built here"
        )
    dockerfile = str(build.get("dockerfile", "Dockerfile"))
    if posixpath.normpath(dockerfile) != "Dockerfile":
        problems.append(
            f"service main is built from '{dockerfile}': only environment/Dockerfile is built here; "
            "rename it Dockerfile"
        )
    return problems
