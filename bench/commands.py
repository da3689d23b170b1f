"""6. Commands: a bash `true` through the Episode API, in one episode, with each local sandbox.

The local sandbox's shell lives for the episode and forks each command (`agent_env.sandbox._shell`):
measured unconfined and, where it runs, under bubblewrap, side by side in the same run with the way
before it (`ProcessPerCommand`, through the same Episode API): a bash started for each command, and
a bubblewrap too when confined. With a Docker engine, the docker sandbox's shell likewise, against a
`docker exec` for each command. Targets: p50 at most 2 ms, with and without bubblewrap; 10 ms with
Docker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from agent_env._contracts.sandbox import CappedOutput
from agent_env.sandbox import CommandResult
from bench.common import Figure, Results, docker_engine, percentile
from bench.serve import BUNDLE

SHELL_TASK = 1  # ping-shell: the counter env and a sandbox
TARGETS_MS = {"local sandbox, unconfined": 2.0, "local sandbox, bubblewrap": 2.0, "docker sandbox": 10.0}
_OLD_POLL_S = 0.01


async def through_episode(provider: Any, count: int) -> list[float]:
    """Seconds per `bash true` of one episode's `count` commands, through `Episode.call_tool`."""
    from agent_env import Episode, load_bundle

    episode = Episode(load_bundle(BUNDLE).splits["train"][SHELL_TASK], provider=provider)
    await episode.deploy()
    try:
        return await _timed(lambda: episode.call_tool("bash", {"command": "true"}), count)
    finally:
        await episode.teardown()


class ProcessPerCommand:
    """The way before, as a sandbox provider: a folder, and a bash started for each command (under
    its own bubblewrap, if given) whose output is drained and whose exit is polled every 10 ms."""

    name = "process-per-command"

    def __init__(self, parent: Path, bwrap: str | None) -> None:
        self.parent, self.bwrap = parent, bwrap

    async def create(self, files: Mapping[str, bytes]) -> ProcessPerCommand.Sandbox:
        return ProcessPerCommand.Sandbox(Path(tempfile.mkdtemp(dir=self.parent)), self.bwrap)

    class Sandbox:
        def __init__(self, root: Path, bwrap: str | None) -> None:
            self.root, self.bwrap = root, bwrap

        async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
            from agent_env.sandbox._bubblewrap import confined

            argv = ["bash", "-c", command]
            process = await asyncio.create_subprocess_exec(
                *(confined(self.bwrap, self.root, argv) if self.bwrap else argv),
                cwd=self.root,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
            assert process.stdout is not None
            output = CappedOutput(max_output_bytes)
            reader = asyncio.ensure_future(_drain(process.stdout, output))
            waiting = asyncio.ensure_future(process.wait())
            try:
                async with asyncio.timeout(timeout_s):
                    while process.returncode is None and not waiting.done():
                        await asyncio.wait({waiting}, timeout=_OLD_POLL_S)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await waiting
                await reader
            return CommandResult(process.returncode, output.text())

        async def teardown(self) -> None:
            shutil.rmtree(self.root, ignore_errors=True)


class ExecPerCommand:
    """The way before, for Docker: the same container as the docker sandbox's, and a `docker exec`
    for each command (its output streamed back, then the exec inspected for the exit code)."""

    name = "exec-per-command"

    def __init__(self) -> None:
        from agent_env.sandbox import DockerSandboxProvider, SandboxConfig

        self.provider = DockerSandboxProvider(SandboxConfig(provider="docker"))

    async def create(self, files: Mapping[str, bytes]) -> ExecPerCommand.Sandbox:
        return ExecPerCommand.Sandbox(await self.provider.create(files))

    class Sandbox:
        def __init__(self, sandbox: Any) -> None:
            self.sandbox = sandbox

        async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
            from agent_env._threads import run_sync

            return await run_sync(self._exec, command, max_output_bytes)

        def _exec(self, command: str, max_output_bytes: int) -> CommandResult:
            api = self.sandbox.container.client.api
            execution = api.exec_create(self.sandbox.container.id, ["/bin/bash", "-c", command])
            output = CappedOutput(max_output_bytes)
            for chunk in api.exec_start(execution["Id"], stream=True):
                output.add(chunk)
            return CommandResult(api.exec_inspect(execution["Id"]).get("ExitCode"), output.text())

        async def teardown(self) -> None:
            await self.sandbox.teardown()


async def _drain(stream: asyncio.StreamReader, output: CappedOutput) -> None:
    while chunk := await stream.read(64 * 1024):
        output.add(chunk)


async def _timed(call: Callable[[], Awaitable[object]], count: int) -> list[float]:
    await call()  # the first command also starts the shell: a reset's work, not a command's
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return samples


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    from agent_env.sandbox import LocalSandboxProvider
    from agent_env.sandbox._bubblewrap import bubblewrap_for

    count, rounds = (10, 1) if quick else (40, 5)
    bwrap = bubblewrap_for("auto")
    ways: dict[str, Callable[[], Any]] = {
        "local sandbox, unconfined": lambda: LocalSandboxProvider(workdir, isolation="none"),
        "the way before, unconfined": lambda: ProcessPerCommand(workdir, None),
    }
    if bwrap is not None:
        ways["local sandbox, bubblewrap"] = lambda: LocalSandboxProvider(workdir, isolation="bubblewrap")
        ways["the way before, bubblewrap"] = lambda: ProcessPerCommand(workdir, bwrap)
    if docker := docker_engine():
        ways["docker sandbox"] = _docker_provider
        ways["the way before, docker: an exec per command"] = ExecPerCommand
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):  # alternating, so that drift in the machine's load falls on all alike
        for name, provider in ways.items():
            samples[name] += asyncio.run(through_episode(provider(), count))
    for name, seconds in samples.items():
        target = TARGETS_MS.get(name)
        results.add(
            Figure("commands", f"bash true, {name}: p50", percentile(seconds, 50) * 1e3, "ms", target),
            Figure("commands", f"bash true, {name}: p95", percentile(seconds, 95) * 1e3, "ms"),
        )
    if bwrap is None:
        results.add(
            Figure("commands", "bash true, local sandbox, bubblewrap", float("nan"), "ms", note="no bwrap")
        )
    if not docker:
        results.add(
            Figure("commands", "bash true, docker sandbox", float("nan"), "ms", note="no Docker engine")
        )


def _docker_provider() -> Any:
    from agent_env.sandbox import DockerSandboxProvider, SandboxConfig

    return DockerSandboxProvider(SandboxConfig(provider="docker"))
