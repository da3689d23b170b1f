"""An image built from a Dockerfile's folder once per content, or a named image used as it is (a
Harbor task's environment/ or `docker_image`).

The tag is the build context's content digest (`agent-env-harbor:<digest>`), so a folder that did not
change finds its image already built: a second load or episode builds nothing. A build that fails or
outlasts its time is an `ImageBuildError` with the build log's last lines.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_env._digest import folder_digest
from agent_env.sandbox.docker_engine import SANDBOX_LABEL
from agent_env.sandbox.docker_image import ImageBuildError

IMAGE_REPOSITORY = "agent-env-harbor"
LOG_TAIL_LINES = 20


@dataclass(frozen=True)
class TaskImage:
    """The image a task's containers run, and its working folder (its WORKDIR)."""

    tag: str
    workdir: str
    built: bool
    """Whether this load built it (False: the engine had it already)."""


def image_tag(environment: Path) -> str:
    """The tag the build context `environment` is built as: its content's digest."""
    return f"{IMAGE_REPOSITORY}:{folder_digest(environment).removeprefix('sha256:')[:24]}"


def task_image(client: Any, environment: Path, docker_image: str | None, build_timeout_s: float) -> TaskImage:
    """The task's image: `docker_image` if given (pulled when the engine lacks it), else its
    environment/ built, unless an image of the same content is there already."""
    import docker.errors

    if docker_image is not None:
        try:
            image = client.images.get(docker_image)
        except docker.errors.ImageNotFound:
            try:
                image = client.images.pull(docker_image)
            except docker.errors.APIError as exc:
                raise ImageBuildError(
                    f"[environment] docker_image '{docker_image}' is not in the Docker engine and could not "
                    f"be pulled ({exc.explanation or exc}): pull it (`docker pull {docker_image}`) or load "
                    "it (`docker load`) into this engine first"
                ) from None
        return TaskImage(docker_image, _workdir(image), built=False)
    tag = image_tag(environment)
    try:
        return TaskImage(tag, _workdir(client.images.get(tag)), built=False)
    except docker.errors.ImageNotFound:
        pass
    _build(client, environment, tag, build_timeout_s)
    return TaskImage(tag, _workdir(client.images.get(tag)), built=True)


def _build(client: Any, environment: Path, tag: str, timeout_s: float) -> None:
    """Build environment/ as `tag`; a failure raises with the build log's last lines."""
    import docker.errors

    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    deadline = time.monotonic() + timeout_s
    try:
        for chunk in client.api.build(
            path=str(environment),
            tag=tag,
            rm=True,
            forcerm=True,
            decode=True,
            labels={f"{SANDBOX_LABEL}.harbor": "1"},
            timeout=timeout_s,
        ):
            for line in str(chunk.get("stream", "")).splitlines():
                if line.strip():
                    tail.append(line.rstrip())
            if "error" in chunk:
                tail.append(str(chunk["error"]).strip())
                raise ImageBuildError(_failed("failed", tail))
            if time.monotonic() > deadline:
                raise ImageBuildError(_failed(f"ran past its build_timeout_sec of {timeout_s:g} s", tail))
    except docker.errors.APIError as exc:
        tail.append(str(exc.explanation or exc))
        raise ImageBuildError(_failed("failed", tail)) from None
    except OSError as exc:  # the engine's answer timed out
        raise ImageBuildError(_failed(f"did not finish within {timeout_s:g} s ({exc})", tail)) from None


def _failed(how: str, tail: deque[str]) -> str:
    log = "\n      ".join(tail) or "(no output)"
    return (
        f"environment/Dockerfile's build {how}; its log ends:\n      {log}\n    fix the Dockerfile (or raise "
        "[environment] build_timeout_sec), or build the image on a machine with network and name it in "
        "[environment] docker_image"
    )


def _workdir(image: Any) -> str:
    """The image's WORKDIR, where Harbor runs commands when the task names none; / without one."""
    return str((image.attrs.get("Config") or {}).get("WorkingDir") or "/")
