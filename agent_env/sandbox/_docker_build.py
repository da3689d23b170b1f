"""An image built from a Dockerfile's folder once per content, or a named image used as it is (a
Harbor task's environment/ or `docker_image`).

The tag is the build context's content digest (`agent-env-harbor:<digest>`), so a folder that did not
change finds its image already built: a second load or episode builds nothing. The image carries the
IDs of the images its Dockerfile builds on (`FROM`, `COPY --from`) as a label, and is rebuilt when
the engine's image of one of those names is another now (a base re-tagged to a newer image); a base
the engine lacks (images carried to a machine without network, bases left behind) is not a reason
to. A build that fails or outlasts its time is an `ImageBuildError` with the informative lines of
its log (`_build_log.py`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_env._digest import folder_digest
from agent_env._errors import ArgumentError
from agent_env.sandbox._build_log import BuildLog
from agent_env.sandbox._docker_engine import SANDBOX_LABEL
from agent_env.sandbox._docker_image import ImageBuildError
from agent_env.sandbox._dockerfile import base_images

IMAGE_REPOSITORY = "agent-env-harbor"
BASES_LABEL = f"{SANDBOX_LABEL}.harbor.bases"
"""On an image built here: the IDs of the images it was built on, by the names its Dockerfile uses
(JSON); none when its Dockerfile's bases could not be told, and then it is rebuilt at each load."""


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


def task_image(
    client: Any, environment: Path, docker_image: str | None, build_timeout_s: float, tag: str | None = None
) -> TaskImage:
    """The task's image: `docker_image` if given (pulled when the engine lacks it), else its
    environment/ built as `tag` (default: `image_tag(environment)`), unless an image of the same
    content, built on the images its Dockerfile names as the engine has them now, is there already."""
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
    tag = tag or image_tag(environment)
    bases = _bases(client, environment)
    try:
        found = client.images.get(tag)
    except docker.errors.ImageNotFound:
        found = None
    if found is not None and _built_on(found, bases):
        return TaskImage(tag, _workdir(found), built=False)
    _build(client, environment, tag, build_timeout_s, bases)
    return TaskImage(tag, _workdir(client.images.get(tag)), built=True)


def _bases(client: Any, environment: Path) -> dict[str, str | None] | None:
    """The ID of each image the Dockerfile builds on, by its name there (None: the engine lacks it);
    None when which images those are cannot be told from the Dockerfile."""
    import docker.errors

    try:
        names = base_images((environment / "Dockerfile").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    if names is None:
        return None
    ids: dict[str, str | None] = {}
    for name in names:
        try:
            ids[name] = str(client.images.get(name).id)
        except (docker.errors.ImageNotFound, docker.errors.APIError):  # absent, or not a valid name
            ids[name] = None
    return ids


def _built_on(image: Any, bases: dict[str, str | None] | None) -> bool:
    """Whether `image` was built on the images the engine has now under its bases' names (a base the
    engine lacks does not count: it could not be built again anyway)."""
    if bases is None:
        return False
    try:
        recorded = json.loads(((image.attrs.get("Config") or {}).get("Labels") or {})[BASES_LABEL])
    except (KeyError, TypeError, ValueError):
        recorded = {}
    if not isinstance(recorded, dict):
        recorded = {}
    return all(now is None or recorded.get(name) == now for name, now in bases.items())


def _build(
    client: Any, environment: Path, tag: str, timeout_s: float, bases: dict[str, str | None] | None
) -> None:
    """Build environment/ as `tag`; a failure raises with the build log's informative lines."""
    import docker.errors

    labels = {f"{SANDBOX_LABEL}.harbor": "1"}
    if bases is not None:
        labels[BASES_LABEL] = json.dumps({n: i for n, i in bases.items() if i is not None}, sort_keys=True)
    log = BuildLog()
    deadline = time.monotonic() + timeout_s
    try:
        for chunk in client.api.build(
            path=str(environment),
            tag=tag,
            rm=True,
            forcerm=True,
            decode=True,
            labels=labels,
            timeout=timeout_s,
        ):
            log.add(str(chunk.get("stream", "")))
            if "error" in chunk:
                log.add_line(str(chunk["error"]))
                raise ImageBuildError(_failed("failed", log))
            if time.monotonic() > deadline:
                raise ImageBuildError(_failed(f"ran past its build_timeout_sec of {timeout_s:g} s", log))
    except docker.errors.APIError as exc:
        log.add_line(str(exc.explanation or exc))
        raise ImageBuildError(_failed("failed", log)) from None
    except OSError as exc:  # the engine's answer timed out
        raise ImageBuildError(_failed(f"did not finish within {timeout_s:g} s ({exc})", log)) from None


def _failed(how: str, build_log: BuildLog) -> str:
    log = "\n      ".join(build_log.lines()) or "(no output)"
    return (
        f"environment/Dockerfile's build {how}; its log ends:\n      {log}\n    fix the Dockerfile (or raise "
        "[environment] build_timeout_sec), or build the image on a machine with network and name it in "
        "[environment] docker_image"
    )


def _workdir(image: Any) -> str:
    """The image's WORKDIR, where Harbor runs commands when the task names none; / without one."""
    return str((image.attrs.get("Config") or {}).get("WorkingDir") or "/")


@dataclass(frozen=True)
class ImageRequest:
    """One task's image, as its task.toml asks for it: `docker_image` by name, else its environment/
    built within `build_timeout_s`."""

    environment: Path
    docker_image: str | None
    build_timeout_s: float

    def key(self) -> str:
        """What identical requests share: the image's name, or the build context's content tag."""
        return f"name {self.docker_image}" if self.docker_image is not None else image_tag(self.environment)


def task_images(
    client: Any, requests: Sequence[ImageRequest], concurrency: int
) -> list[TaskImage | ImageBuildError]:
    """Each request's image (or why it could not be had), in the requests' order: up to `concurrency`
    built or fetched at once, identical requests (one image name, or build contexts of one content)
    once. The engine builds images side by side, and a build mostly waits (on its base's layers, its
    downloads, its commits), so a dataset builds in a fraction of the time one at a time takes."""
    if concurrency < 1:
        raise ArgumentError(f"concurrency must be 1 or more, got {concurrency}")
    keys = [request.key() for request in requests]
    first = {key: requests[keys.index(key)] for key in dict.fromkeys(keys)}

    def one(key: str) -> TaskImage | ImageBuildError:
        request = first[key]
        tag = None if request.docker_image is not None else key
        try:
            return task_image(client, request.environment, request.docker_image, request.build_timeout_s, tag)
        except ImageBuildError as exc:
            return exc

    if concurrency == 1 or len(first) <= 1:
        got = {key: one(key) for key in first}
    else:
        with ThreadPoolExecutor(min(concurrency, len(first)), thread_name_prefix="agent-env-build") as pool:
            got = dict(zip(first, pool.map(one, first), strict=True))
    return [got[key] for key in keys]
