"""9. A Harbor dataset at the engine's speed: its images built and its reference plays replayed, one
at a time and concurrently, side by side in the same run.

The dataset is written here: TASKS task folders, each with its own small Dockerfile FROM the sandbox
image (a step writing the task's numbers, and a step that waits 0.5 s in place of a download, as
Terminal-Bench's `apt-get` and `pip` steps wait on the network: this engine has none), so that each
is a build of its own; a solve.sh that writes the answer and a test.sh that checks it, each waiting
0.25 s first in place of a real script's own work (pytest starting, a service coming up: real
Terminal-Bench tasks took 4.5 s each to replay when issue 46 was filed). The builds: the dataset
loaded with one build at a time, then with the default, each time with Dockerfiles of a new nonce
(no image or layer of the engine's to reuse). The plays: every task's solve.sh replayed as `agent-env
replay` plays it (`replay_many`), one at a time and at the default concurrency in alternating rounds,
each until its last container is removed. Target: each at least 1.8 times as fast concurrently.
Beside them, without a target, the same with no wait in the Dockerfiles or the scripts: the
engine's own work alone (a container's start, its execs and removal take about 0.4 CPU-seconds a
play here, so one play at a time keeps a core busy already, and 2 cores can do at most twice as much).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from pathlib import Path
from typing import Any

from agent_env.sandbox import SANDBOX_LABEL
from bench.common import Figure, Results, docker_engine

TASKS = 50
QUICK_TASKS = 4
TARGET = 1.8
DOWNLOAD_S = 0.5
WORK_S = 0.25
REMOVED_WITHIN_S = 120.0
TOML = """[agent]
timeout_sec = 60.0

[verifier]
timeout_sec = 30.0

[environment]
memory_mb = 256
build_timeout_sec = 300.0
"""


def write_dataset(root: Path, count: int, nonce: str, *, download: bool = True, work: bool = True) -> Path:
    """`count` Harbor task folders under `root`, each a build of its own (its numbers, the nonce): with
    a step waiting in place of a download if `download`, and scripts waiting in place of their work
    if `work`. The scripts are no part of the image: datasets of one nonce share their images."""
    from agent_env.sandbox import DEFAULT_IMAGE

    wait = f"RUN sleep {DOWNLOAD_S:g}  # in place of a download\n" if download else ""
    working = f"sleep {WORK_S:g}  # in place of the script's own work\n" if work else ""
    for n in range(count):
        task = root / f"sum-{n:03d}"
        for folder in ("environment", "tests", "solution"):
            (task / folder).mkdir(parents=True, exist_ok=True)
        numbers = n + 2
        (task / "environment" / "Dockerfile").write_text(
            f"FROM {DEFAULT_IMAGE}\n"
            f"RUN echo {nonce} > /nonce && mkdir -p /srv/task "  # the nonce first: nothing cached
            f"&& seq 1 {numbers} > /srv/task/numbers\n"
            f"{wait}WORKDIR /srv/task\n"
        )
        (task / "task.toml").write_text(TOML)
        (task / "instruction.md").write_text(
            "/srv/task/numbers holds a number a line. Write their sum to /srv/task/answer.\n"
        )
        expected = numbers * (numbers + 1) // 2
        (task / "tests" / "test.sh").write_text(
            f"#!/bin/bash\n{working}mkdir -p /logs/verifier\n"
            f'if [ "$(cat /srv/task/answer 2>/dev/null)" = "{expected}" ]; then echo 1; else echo 0; fi'
            " > /logs/verifier/reward.txt\n"
        )
        (task / "solution" / "solve.sh").write_text(
            f"#!/bin/bash\n{working}awk '{{s += $1}} END {{print s}}' /srv/task/numbers > /srv/task/answer\n"
        )
    return root


def built(root: Path, concurrency: int) -> tuple[float, Any]:
    """Seconds to load the dataset at `root`, building its images `concurrency` at once; the bundle."""
    from agent_env import load_bundle

    start = time.perf_counter()
    bundle = load_bundle(root, build_concurrency=concurrency)
    return time.perf_counter() - start, bundle


def removed(bundle: Any) -> None:
    """The bundle's task images, out of the engine (each round builds its own)."""
    import docker

    client = docker.from_env(timeout=120)
    try:
        for task in bundle.tasks("train"):
            with contextlib.suppress(docker.errors.APIError):
                client.images.remove(task.sandbox_settings.image, force=True)
    finally:
        client.close()


def replayed(bundle: Any, concurrency: int) -> tuple[float, int]:
    """Seconds to replay every task's solve.sh, `concurrency` at once, until the last of their
    containers is removed (a removal left to the background must not fall on the next way's time);
    how many plays did not score 1."""
    import docker

    from agent_env import Episode, replay_many

    tasks = bundle.tasks("train")
    solutions = bundle.solutions["train"]
    images = {task.sandbox_settings.image for task in tasks}
    client = docker.from_env(timeout=120)

    def left() -> bool:
        listed = client.containers.list(all=True, filters={"label": SANDBOX_LABEL}, sparse=True)
        return any(container.attrs.get("Image") in images for container in listed)

    async def play() -> tuple[float, list[Any]]:
        plays = [(Episode(task), solutions[task.id].turns) for task in tasks]  # their engine's clients
        start = time.perf_counter()
        return start, await replay_many(plays, concurrency=concurrency)

    try:
        start, results = asyncio.run(play())
        deadline = time.perf_counter() + REMOVED_WITHIN_S
        while left() and time.perf_counter() < deadline:
            time.sleep(0.02)
        seconds = time.perf_counter() - start
    finally:
        client.close()
    return seconds, sum(result.score != 1.0 for result in results)


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    if not docker_engine():
        results.add(Figure("dataset", "Harbor dataset", float("nan"), "s", note="no Docker engine"))
        return
    from agent_env._concurrency import default_concurrency

    count = QUICK_TASKS if quick else TASKS
    at_once = default_concurrency()
    one, many = "one at a time", f"{at_once} at once"
    ways = {one: 1, many: at_once}

    def dataset(nonce: str, *, download: bool, work: bool) -> Path:
        root = workdir / f"dataset-{uuid.uuid4().hex[:8]}"
        return write_dataset(root, count, nonce, download=download, work=work)

    # each kind of build once a way, the second kind in the other order; no image is reused
    builds: dict[bool, dict[str, float]] = {True: {}, False: {}}
    kept = ""
    for waits, order in ((True, (one, many)), (False, (many, one))):
        for name in order:
            nonce = uuid.uuid4().hex
            builds[waits][name], loaded = built(dataset(nonce, download=waits, work=waits), ways[name])
            if waits and name == many:
                kept = nonce  # its images are replayed below
            else:
                removed(loaded)
    plays: dict[bool, dict[str, list[float]]] = {True: {one: [], many: []}, False: {one: [], many: []}}
    wrong = 0
    bundle = None
    try:
        rounds: tuple[tuple[bool, tuple[str, ...]], ...] = (
            (True, (one, many, many, one)[: 2 if quick else 4]),
            (False, (many, one)),
        )
        for waits, sequence in rounds:  # the kept images, found: nothing is built
            _, bundle = built(dataset(kept, download=True, work=waits), at_once)
            for name in sequence:  # alternating rounds
                took, missed = replayed(bundle, ways[name])
                plays[waits][name].append(took)
                wrong += missed
    finally:
        if bundle is not None:
            removed(bundle)
    for waits in (True, False):
        build, play = builds[waits], {name: sum(v) / len(v) for name, v in plays[waits].items()}
        target = TARGET if waits else None
        built_as = f"a step waiting {DOWNLOAD_S:g} s" if waits else "no step waiting"
        played_as = f"each script waiting {WORK_S:g} s" if waits else "no script waiting"
        played = len(plays[waits][one])
        results.add(
            Figure("dataset", f"{count} tasks' images built ({built_as}), {one}", build[one], "s"),
            Figure("dataset", f"{count} tasks' images built ({built_as}), {many}", build[many], "s"),
            Figure(
                "dataset",
                f"images built ({built_as}): {one} / {many}",
                build[one] / build[many],
                "x",
                target,
                lower=False,
            ),
            Figure(
                "dataset",
                f"{count} tasks replayed ({played_as}), {one}",
                play[one],
                "s",
                note=f"mean of {played}",
            ),
            Figure(
                "dataset",
                f"{count} tasks replayed ({played_as}), {many}",
                play[many],
                "s",
                note=f"mean of {played}",
            ),
            Figure(
                "dataset",
                f"replayed ({played_as}): {one} / {many}",
                play[one] / play[many],
                "x",
                target,
                lower=False,
            ),
        )
        for name, values in plays[waits].items():
            print(f"bench: dataset: replays ({played_as}), {name}: {', '.join(f'{v:.2f} s' for v in values)}")
    results.add(Figure("dataset", "replayed tasks not scoring 1", float(wrong), "", 0.0))
