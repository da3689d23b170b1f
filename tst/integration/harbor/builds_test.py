"""A Harbor dataset's images in a real engine: built side by side, each build context once, problems
told in the tasks' order, a task rebuilt when its base image was re-tagged, and a failed build's log
shown clean."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env import BundleError, load_bundle
from agent_env._contracts.sandbox_settings import DEFAULT_IMAGE
from agent_env.cli import main
from agent_env.sandbox._docker_build import image_tag, task_image

TOML = """
[verifier]
timeout_sec = 30.0

[environment]
memory_mb = 256
build_timeout_sec = 120.0
"""
TEST_SH = "#!/bin/bash\nmkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n"


def write_task(root: Path, name: str, dockerfile: str, toml: str = TOML) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("Reply done.\n")
    (task / "task.toml").write_text(toml)
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    (task / "tests" / "test.sh").write_text(TEST_SH)
    return task


@pytest.fixture
def images(docker_client: Any) -> Iterator[list[str]]:
    """Tags a test made (its tasks', its bases'): removed after it, whatever it left."""
    made: list[str] = []
    yield made
    for tag in reversed(made):
        with contextlib.suppress(Exception):  # already gone
            docker_client.images.remove(tag, force=True)


def based(docker_client: Any, repository: str, version: str) -> str:
    """An image FROM the sandbox image holding /base-version, tagged `repository:latest`; its ID."""
    dockerfile = f"FROM {DEFAULT_IMAGE}\nRUN echo {version} > /base-version\n"
    image, _ = docker_client.images.build(
        fileobj=io.BytesIO(dockerfile.encode()), tag=f"{repository}:latest", rm=True, forcerm=True
    )
    return str(image.id)


def seen_in(docker_client: Any, image: str) -> str:
    output: bytes = docker_client.containers.run(image, ["cat", "/seen"], remove=True, network_mode="none")
    return output.decode().strip()


def test_a_tasks_image_is_rebuilt_once_its_base_was_re_tagged_to_another_image_and_not_while_it_stays(
    tmp_path: Path, docker_client: Any, images: list[str]
):
    base = f"agent-env-test-base-{uuid.uuid4().hex[:12]}"
    images.append(f"{base}:latest")
    first_base = based(docker_client, base, "v1")
    task = write_task(tmp_path, "on-base", f"FROM {base}:latest\nRUN cat /base-version > /seen\n")
    images.append(image_tag(task / "environment"))

    built = task_image(docker_client, task / "environment", None, 120)
    again = task_image(docker_client, task / "environment", None, 120)
    images.append(first_base)
    second_base = based(docker_client, base, "v2")  # the same name, now another image
    rebuilt = task_image(docker_client, task / "environment", None, 120)
    loaded = load_bundle(task)
    images.append(second_base)

    assert first_base != second_base
    assert (built.built, again.built, rebuilt.built) == (True, False, True)
    assert built.tag == again.tag == rebuilt.tag == loaded.tasks("train")[0].sandbox_settings.image
    assert seen_in(docker_client, rebuilt.tag) == "v2"


def test_a_tasks_image_whose_base_the_engine_lacks_is_used_as_it_is(
    tmp_path: Path, docker_client: Any, images: list[str]
):
    base = f"agent-env-test-base-{uuid.uuid4().hex[:12]}"
    base_id = based(docker_client, base, "v1")
    task = write_task(tmp_path, "carried", f"FROM {base}:latest\nRUN cat /base-version > /seen\n")
    images.append(image_tag(task / "environment"))
    images.append(base_id)
    built = task_image(docker_client, task / "environment", None, 120)

    docker_client.images.remove(f"{base}:latest")  # as on a machine the task's image was carried to
    after = task_image(docker_client, task / "environment", None, 120)

    assert (built.built, after.built) == (True, False)
    assert seen_in(docker_client, after.tag) == "v1"


def counted(build: Callable[..., Any], tags: list[str]) -> Callable[..., Any]:
    def counting(*args: Any, **kwargs: Any) -> Any:
        tags.append(kwargs["tag"])
        return build(*args, **kwargs)

    return counting


def test_a_datasets_images_are_built_side_by_side_each_context_once_and_its_problems_told_in_task_order(
    tmp_path: Path, docker_client: Any, images: list[str], monkeypatch: pytest.MonkeyPatch, capsys: Any
):
    nonce = uuid.uuid4().hex
    slow = f"FROM {DEFAULT_IMAGE}\nRUN sleep 2 && echo {nonce} > /slow-{{n}}\n"
    dataset = tmp_path / "dataset"
    for n in range(3):
        write_task(dataset, f"a-slow-{n}", slow.format(n=n))
    write_task(dataset, "b-slow-same", slow.format(n=0))  # the same context as a-slow-0
    write_task(dataset, "c-fails-slowly", f"FROM {DEFAULT_IMAGE}\nRUN sleep 2 && echo {nonce} && exit 3\n")
    linked = write_task(dataset, "d-solution-links-out", f"FROM {DEFAULT_IMAGE}\nLABEL nonce={nonce}\n")
    (linked / "solution").mkdir()
    (linked / "solution" / "solve.sh").symlink_to(tmp_path / "elsewhere.sh")
    (tmp_path / "elsewhere.sh").write_text("echo hi\n")
    write_task(dataset, "e-fails-at-once", f"FROM {DEFAULT_IMAGE}\nCOPY missing-{nonce}.txt /\n")
    images.extend(image_tag(dataset / name / "environment") for name in ("a-slow-0", "a-slow-1", "a-slow-2"))
    images.append(image_tag(linked / "environment"))
    built: list[str] = []
    monkeypatch.setattr(docker_client.api, "build", counted(docker_client.api.build, built))
    monkeypatch.setattr("agent_env.sandbox._docker_engine.docker_client", lambda: docker_client)

    started = time.monotonic()
    code = main(["check", str(dataset), "--build-concurrency", "4"])
    took = time.monotonic() - started

    problems = [line for line in capsys.readouterr().err.splitlines() if line.startswith("  ")]
    assert code == 1
    assert [line.split(":")[0].strip() for line in problems if not line.startswith("    ")] == [
        "c-fails-slowly/environment/",
        "d-solution-links-out/solution/solve.sh",
        "e-fails-at-once/environment/",
    ]
    assert len(built) == len(set(built)) == 6  # b-slow-same is a-slow-0's build
    assert took < 4 * 2.0  # four builds that each sleep 2 s: side by side, not one after another


def test_a_failed_builds_problem_shows_the_failing_step_its_errors_and_a_retry_once_with_no_escape_codes(
    tmp_path: Path,
):
    retry = r"\033[33mWARNING: Retrying (Retry(total=%s)) after connection broken: /simple/requests/\033[0m\n"
    step = (
        f"RUN for n in 4 3 2 1 0; do printf '{retry}' $n; done; "
        r"printf '\033[31mERROR: No matching distribution found for requests\033[0m\n'; exit 1"
    )
    task = write_task(tmp_path, "offline-pip", f"FROM {DEFAULT_IMAGE}\nRUN echo fine\n{step}\n")

    with pytest.raises(BundleError) as refused:
        load_bundle(task)

    message = str(refused.value)
    log = message.split("its log ends:\n")[1].split("\n    fix the Dockerfile")[0]
    retried = "WARNING: Retrying (Retry(total=4)) after connection broken: /simple/requests/"
    shown = [line.strip() for line in log.splitlines()]
    # Step 3 of 5: the builder adds the image's two labels as two more steps
    assert shown == [
        f"Step 3/5 : {step}",
        f"{retried}  (and 4 more like it)",
        "ERROR: No matching distribution found for requests",
        f"The command '/bin/sh -c {step[4:]}' returned a non-zero code: 1",
    ]
    assert "\x1b" not in message


def test_once_the_engine_said_it_cannot_cap_a_containers_disk_each_other_tasks_container_is_one_create(
    docker_client: Any, monkeypatch: pytest.MonkeyPatch
):
    import docker.models.containers

    from agent_env._contracts.sandbox_settings import SandboxConfig
    from agent_env.sandbox._docker import DockerSandboxProvider

    creates: list[str] = []
    real = docker.models.containers.ContainerCollection.create

    def create(self: Any, image: str, *args: Any, **kwargs: Any) -> Any:
        creates.append(image)
        return real(self, image, *args, **kwargs)

    monkeypatch.setattr(docker.models.containers.ContainerCollection, "create", create)
    settings = SandboxConfig(provider="docker", image=DEFAULT_IMAGE, workdir="/", storage_mb=512)
    first, second = (DockerSandboxProvider(settings, client=docker_client) for _ in range(2))

    async def one_each() -> list[int]:
        made = []
        for provider in (first, second):
            before = len(creates)
            sandbox = await provider.create({})
            made.append(len(creates) - before)
            await sandbox.teardown()
            await provider.close()
        return made

    made = asyncio.run(one_each())

    assert made[0] in (1, 2)  # 2 where the engine refused the cap, then made it without
    assert made[1] == 1
