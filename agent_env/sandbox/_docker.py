"""The `docker` sandbox: one container per episode through the Docker SDK (the `docker` extra).

A container has no network, CPU, memory and pids limits, no capabilities and no way to gain any, a
read-only root filesystem, and runs as a user other than root (by default). Only its work folder and
/tmp are writable: each is a tmpfs of `work_mb`, so a command that fills them gets "no space left"
and the host's disk is untouched. The commands are run by a shell that lives in the container for
the episode (`agent_env.sandbox._shell`), one `exec` whose stdin and output are its attach socket,
started with the container; the task's files are unpacked into the work folder by the container's
`tar`, as its user, before the first turn (through that shell when they fit in one command). When a
command returns, the shell kills every process it left behind (`kill -9 -1` spares only the
container's init and the shell itself), so nothing runs between commands, as with `local`. Past a
command's deadline, the container's init is sent SIGUSR1, which it passes on to the shell, which
kills the command; only a shell that does not is killed, and the next command starts a new one. At
teardown, whatever happened, nothing the episode started runs on (a command running then is killed
with the container), and the container is removed in the background (`docker_removal`).

Sealed for its verifiers (`seal`, `agent_env.sandbox._sealing`), the agent's shell is ended and every
process it left killed, the engine's diff of the container is checked for changes to the system's
own files, the container is moved to the verifiers' phase's network when a task asks for another
than its agent's (`agent_env.sandbox._docker_network`), and the verifiers' commands run in a shell of
their own, started by a new exec.

The engine is checked when the provider is made, that is when a server starts, so a missing engine
or image is an error before the first episode rather than at it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import logging
import socket
import tarfile
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from agent_env._contracts.sandbox import CappedOutput, CommandResult
from agent_env._contracts.sandbox_settings import SandboxConfig
from agent_env._error_types import SandboxUnavailableError
from agent_env._errors import StateError
from agent_env._private.docker_attach import output_chunks, raw_socket
from agent_env._threads import run_sync
from agent_env.sandbox._docker_engine import (
    ENGINE_TIMEOUT_S,
    INSTALL_HINT as INSTALL_HINT,  # its home is the engine's leaf
    docker_client,
)
from agent_env.sandbox._docker_image import WORK_FOLDER
from agent_env.sandbox._docker_network import DEFAULT_NETWORK, NetworkPhases, missing
from agent_env.sandbox._docker_removal import Removals, remove_orphans
from agent_env.sandbox._owner import owner_labels
from agent_env.sandbox._sealing import (
    Change,
    ProtectedPaths,
    changes_of,
    scratch_folder,
    unscorable,
    verifier_environment,
)
from agent_env.sandbox._shell import DRIVER, SHELL_NAME, Shell, ShellSlot

# Every process but the container's init and this one: one pass is enough, since the kernel signals
# every process at once and a fork under way when the kill comes is cancelled.
_KILL_ALL = ["/bin/bash", "-c", "kill -9 -1"]
_PAGE = 4096
_CHECK_TIMEOUT_S = 10.0
_MAX_INLINE_ARCHIVE = 96 * 1024
"""The most base64 of the task's files sent as one command (a command is one argument of at most
128 KiB to `bash -c`); more goes in through an exec of its own."""
# The container's init: bash, waiting on a copy of itself that blocks reading the container's stdin
# (held open by the engine, never written), so it runs no program from the container's disk: a
# command that replaced one (`sleep`, say) gets nothing run by the init. Its `wait` reaps every
# orphan it adopts, so killed leftovers leave no zombie that would hold a pid, and `kill -1` never
# reaches it (it spares pid 1); its copy, killed with the rest after each command, is forked again.
# Sent SIGUSR1 (the host's "a command is past its deadline"), it passes it on to every other
# process: the shell, which traps it and kills the command, and the command's processes, which it
# ends. It takes no new process, so it works even when a command holds every pid the container may
# have.
_INIT = [
    "/bin/bash",
    "-c",
    "exec 3<&0; trap 'exit 0' TERM; trap 'kill -USR1 -1' USR1; while :; do (read -r -u 3 _) & wait; done",
]
_ENVIRONMENT = {"HOME": WORK_FOLDER, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
_INIT_RUNS = (
    "for ((n = 0; n < 500; n++)); do "
    "{ read -r -d '' _; read -r -d '' _; read -r -d '' init; } < /proc/1/cmdline; "
    '[[ $init == *"read -r -u 3 _"* ]] && exit 0; sleep 0.02; done; exit 1'
)
"""Wait (10 s at most) until the image's entrypoint is done and the container's pid 1 is the init:
what the entrypoint wrote as it set up is then in the container's changes at start."""

log = logging.getLogger(__name__)
_UNCAPPED_TOLD = threading.Event()
"""Set once the log said the engine cannot cap a container's disk: it says so once a process."""
_UNCAPPED_ENGINES: set[str] = set()
"""The engines (by address) that said they cannot cap a container's disk: asked once a process, not
once a provider (a Harbor dataset of 50 images has 50 providers, and a refused create costs two calls)."""


class DockerSandbox:
    """One episode's container, and the shell in it that runs its commands (`agent_env.sandbox._shell`),
    started with it and again after a command that left it dead."""

    def __init__(
        self,
        container: Any,
        removals: Removals,
        settings: SandboxConfig | None = None,
        protected: ProtectedPaths | None = None,
        networks: NetworkPhases | None = None,
    ) -> None:
        self.container = container
        self._networks = networks or NetworkPhases()
        self._removals = removals
        chosen = settings or SandboxConfig(provider="docker")
        self.folder = chosen.workdir or WORK_FOLDER
        """Where commands run and the task's files go: /work, or the image's own `workdir`."""
        self._own_image = chosen.workdir is not None
        own = {} if self._own_image else _ENVIRONMENT  # an image of its own keeps its HOME, LANG
        self._environment = {**own, **dict(chosen.environment)}
        self._protected = protected or ProtectedPaths.of(
            dict(chosen.environment).get("PATH"), may_change=chosen.may_change, workdir=self.folder
        )
        self._shells: ShellSlot[_ContainerShell] = ShellSlot(self._start, self._end)
        self._removed = False
        self._sealed = False
        self.started_with: frozenset[Change] = frozenset()
        """What the container's filesystem already showed changed once it started (an image's
        entrypoint may write its configuration): none of it is the agent's doing."""

    @property
    def id(self) -> str:
        return str(self.container.id)

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        return await self._shells.run(command, timeout_s=timeout_s, max_output_bytes=max_output_bytes)

    async def check(self) -> None:
        """Start the shell, if it is not running, and make sure it answers: an error if the container died."""
        answer = await self.run(":", timeout_s=_CHECK_TIMEOUT_S, max_output_bytes=_PAGE)
        if answer.exit_code != 0:
            raise StateError(
                f"the sandbox container {self.id[:12]} does not answer: {answer.render(_CHECK_TIMEOUT_S)}"
            )

    async def put_files(self, files: Mapping[str, bytes]) -> None:
        """Unpack `files` into the work folder with the container's own `tar`, as its user; if that
        fails, the sandbox is torn down, since its episode cannot play without them."""
        try:
            await self._unpack(files)
        except BaseException:
            await self.teardown()
            raise

    async def _unpack(self, files: Mapping[str, bytes]) -> None:
        if not files:
            return
        archive = _archive(files)
        encoded = base64.b64encode(archive).decode()
        if len(encoded) <= _MAX_INLINE_ARCHIVE:  # one command: far quicker than an exec of its own
            command = f"set -o pipefail; printf %s '{encoded}' | base64 -d | tar -x -C {self.folder}"
            answer = await self.run(command, timeout_s=ENGINE_TIMEOUT_S, max_output_bytes=_PAGE)
            exit_code, output = answer.exit_code, answer.output
        else:
            exit_code, output = await run_sync(_unpack_by_exec, self.container, archive, self.folder)
        if exit_code != 0:
            raise StateError(
                f"the sandbox could not unpack the task's files into {self.folder} with tar (exit "
                f"{exit_code}: {output.strip()!r}): use an image that has tar and base64, and a work_mb "
                "that holds the files"
            )

    async def seal(self) -> None:
        """End the agent's shell and every process it left; refuse (SYSTEM_CHANGED) an agent that changed
        the system's own files, by the engine's diff of the container; from now on, run commands in a
        shell of the verifiers' own (`agent_env.sandbox._sealing`). Once; later calls do nothing."""
        if self._sealed:
            return
        self._sealed = True
        await self._shells.close()  # its end kills every process but the init, the agent's shell's too
        made = [
            change
            for change in changes_of(await run_sync(self.container.diff))
            if change not in self.started_with
        ]
        changes = self._protected.forbidden(made)
        if changes:
            raise unscorable(changes)
        if self._removed:
            raise StateError("the sandbox has been torn down")
        self._environment = {
            **self._environment,
            **verifier_environment(scratch_folder(), own_home=not self._own_image),
        }
        if self._networks.switches:  # nothing of the agent's runs any more: the verifiers' network
            await run_sync(self._networks.to_verifiers, self.container)
        self._shells = ShellSlot(self._start, self._end)

    async def teardown(self) -> None:
        """Stop what runs in the container at once, and leave its removal to the background.

        Between commands only the container's init and the shell run, both idle (the shell killed
        everything else after the last command): the removal can wait. A command running now is
        killed first, with the container.
        """
        if self._removed:
            return
        self._removed = True
        busy = self._shells.busy
        self._shells.closed = True  # from now on, commands are refused
        if busy:
            await self._kill()
        self._removals.remove(self.container)
        await self._shells.close()

    async def _kill(self) -> None:
        """Kill the container: every process ends at once, and a command running now answers."""
        import docker.errors

        try:
            await run_sync(self.container.kill)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: it was not running any more
                log.warning("could not kill sandbox container %s: %s", self.id[:12], exc)

    async def _start(self) -> _ContainerShell:
        loop = asyncio.get_running_loop()
        return await run_sync(_ContainerShell.start, self.container, loop, self.folder, self._environment)

    async def _end(self, shell: _ContainerShell) -> None:
        if not self._removed:
            await run_sync(self._kill_all)
        shell.close()

    def _kill_all(self) -> None:
        with contextlib.suppress(Exception):
            self.container.exec_run(_KILL_ALL)


class _ContainerShell:
    """One `DRIVER` exec in the container, over its attach socket: written from the event loop (via
    the sync pool), read by a thread of its own that splits the engine's stream into its frames."""

    def __init__(self, container: Any, attached: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._container = container
        self._attached = attached
        self._socket = raw_socket(attached)
        self._loop = loop
        self._chunks: asyncio.Queue[bytes] = asyncio.Queue()
        threading.Thread(target=self._pump, name="agent-env-docker-shell", daemon=True).start()
        self.shell = Shell(self._write, self._chunks.get, self._interrupt)

    @classmethod
    def start(
        cls, container: Any, loop: asyncio.AbstractEventLoop, folder: str, environment: Mapping[str, str]
    ) -> _ContainerShell:
        api = container.client.api
        execution = api.exec_create(
            container.id,
            ["/bin/bash", "-c", DRIVER, SHELL_NAME, "all", ""],
            stdin=True,
            workdir=folder,
            environment=dict(environment),
        )
        return cls(container, api.exec_start(execution["Id"], socket=True), loop)

    async def _write(self, data: bytes) -> None:
        await run_sync(self._socket.sendall, data)

    async def _interrupt(self) -> None:
        """Tell the shell to stop the command it runs, through the container's init (`_INIT`)."""
        await run_sync(self._container.kill, signal="SIGUSR1")

    def _pump(self) -> None:
        """Hand the loop what the shell writes (stdout and stderr alike), then b"" once it ends."""
        with contextlib.suppress(Exception):
            for chunk in output_chunks(self._attached):
                self._loop.call_soon_threadsafe(self._chunks.put_nowait, chunk)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody reads any more
            self._loop.call_soon_threadsafe(self._chunks.put_nowait, b"")

    def close(self) -> None:
        """Let go of the attach socket; its reading thread then ends."""
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            self._attached.close()


class DockerSandboxProvider:
    """Makes one container per episode from `settings.image`, with `settings`' limits.

    A container has a network (`network`, the engine's default bridge unless named) only in a phase
    whose settings ask for one (`network` for the agent's turns, `verifier_network` for its verifiers')
    and when `allow_network` grants it (a server started allowing the internet). A server `start`s
    it, which removes the containers that servers no longer running left on this host, and `close`s
    it, which waits for the removals its sandboxes' teardowns left running.
    """

    name = "docker"

    def __init__(
        self,
        settings: SandboxConfig | None = None,
        *,
        client: Any = None,
        allow_network: bool = False,
        network: str = DEFAULT_NETWORK,
    ) -> None:
        self.settings = settings or SandboxConfig(provider="docker")
        self.networks = NetworkPhases.of(
            self.settings.network and allow_network,
            self.settings.verifiers_network and allow_network,
            network,
        )
        """The network of each phase of an episode (None: none)."""
        self.networked = self.networks.agent is not None
        self._home: str | None = None
        self._entrypoint = False
        """Whether the image runs an entrypoint of its own before the init (set when it is checked)."""
        """HOME for an image of its own that declares none (the engine's exec sets none): root's."""
        self.client = client if client is not None else docker_client()
        self.removals = Removals()
        self.protected = self._check_image()
        """What the agent may not change in a container (`agent_env.sandbox._sealing`), by its image."""

    @property
    def caps_storage(self) -> bool:
        """Whether the engine caps a container's disk, until it once says it cannot."""
        return self._engine_address not in _UNCAPPED_ENGINES

    @property
    def _engine_address(self) -> str:
        return str(getattr(self.client.api, "base_url", ""))

    async def create(self, files: Mapping[str, bytes]) -> DockerSandbox:
        self.check_room(files)
        sandbox = await self.started()
        await sandbox.put_files(files)
        return sandbox

    async def started(self) -> DockerSandbox:
        """A sandbox whose container and shell run, with no files yet."""
        sandbox = DockerSandbox(
            await run_sync(self._start), self.removals, self.settings, self.protected, self.networks
        )
        try:
            await sandbox.check()
            if self.settings.workdir is not None:  # a read-only root shows no change, ever
                if self._entrypoint:
                    await sandbox.run(_INIT_RUNS, timeout_s=ENGINE_TIMEOUT_S, max_output_bytes=_PAGE)
                sandbox.started_with = frozenset(changes_of(await run_sync(sandbox.container.diff)))
        except BaseException:
            await sandbox.teardown()
            raise
        return sandbox

    def check_room(self, files: Mapping[str, bytes]) -> None:
        """An error, saying what to raise, if `files` do not fit in the work folder."""
        needed, room = _footprint(files), self.settings.work_mb * 2**20
        if needed > room:
            raise StateError(
                f"the task's files take {needed / 2**20:.1f} MiB in the work folder, which holds "
                f"{self.settings.work_mb} MiB: raise [sandbox] work_mb in bundle.toml"
            )

    async def start(self) -> None:
        await run_sync(remove_orphans, self.client)

    async def close(self) -> None:
        """Return once every container a teardown left to remove is gone."""
        await self.removals.wait()

    def _start(self) -> Any:
        """Create and start the container; whatever fails, no container of it is left behind.

        The container is named up front, so one the engine made although the call failed (it timed
        out, say) can still be found and removed.
        """
        settings = self.settings
        name = f"agent-env-sandbox-{uuid.uuid4().hex}"
        uid, _, gid = settings.user.partition(":")
        owned = f"uid={uid},gid={gid or uid}"
        if settings.workdir is None:
            filesystem: dict[str, Any] = {
                "read_only": True,
                "working_dir": WORK_FOLDER,
                "tmpfs": {
                    WORK_FOLDER: f"rw,size={settings.work_mb}m,mode=0755,{owned}",
                    "/tmp": f"rw,size={settings.work_mb}m,mode=1777",
                },
            }
        else:  # the image's own folder, on a writable root (capped where the engine can)
            filesystem = {"read_only": False, "working_dir": settings.workdir}
            if settings.storage_mb is not None and self.caps_storage:
                filesystem["storage_opt"] = {"size": f"{settings.storage_mb}m"}
        try:
            container = self._create(name, filesystem)
            container.start()
        except BaseException as exc:
            with contextlib.suppress(Exception):
                self.client.api.remove_container(name, force=True)
            if self.networked and "network" in str(exc).lower() and "not found" in str(exc).lower():
                raise missing(self.networks.network_mode, exc) from exc
            raise
        return container

    def _create(self, name: str, filesystem: dict[str, Any]) -> Any:
        """Create the container; an engine that cannot cap its disk (`storage_opt`) is told once, in
        the log, and the container is made without the cap."""
        import docker.errors

        settings = self.settings
        try:
            return self.client.containers.create(
                settings.image,
                command=_INIT,
                name=name,
                stdin_open=True,  # the init's to wait on (`_INIT`)
                network_mode=self.networks.network_mode,
                nano_cpus=int(settings.cpus * 1e9),
                mem_limit=f"{settings.memory_mb}m",
                memswap_limit=f"{settings.memory_mb}m",
                pids_limit=settings.pids_limit,
                cap_drop=["ALL"],
                cap_add=list(settings.capabilities) or None,
                security_opt=["no-new-privileges"],
                user=settings.user,
                environment={**({"HOME": self._home} if self._home else {}), **dict(settings.environment)}
                or None,
                labels=owner_labels(),
                **filesystem,
            )
        except docker.errors.APIError as exc:
            if "storage_opt" not in filesystem or "storage" not in str(exc).lower():
                raise
            _UNCAPPED_ENGINES.add(self._engine_address)
            if not _UNCAPPED_TOLD.is_set():
                _UNCAPPED_TOLD.set()
                log.warning(
                    "the Docker engine cannot cap a container's disk (%s): the tasks' storage_mb is not "
                    "applied",
                    exc.explanation or exc,
                )
            with contextlib.suppress(Exception):
                self.client.api.remove_container(name, force=True)
            return self._create(name, {k: v for k, v in filesystem.items() if k != "storage_opt"})

    def _check_image(self) -> ProtectedPaths:
        """Check the engine has the image; what the agent may not change in a container of it."""
        import docker.errors

        try:
            image = self.client.images.get(self.settings.image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailableError(
                f"the Docker engine has no image '{self.settings.image}'. Build the default one with "
                f"`agent-env sandbox-image --tag {self.settings.image}`, or set [sandbox] image in "
                "bundle.toml to an image that has /bin/bash"
            ) from exc
        config = image.attrs.get("Config") or {}
        self._entrypoint = bool(config.get("Entrypoint"))
        declared = [str(e) for e in config.get("Env") or []]
        if self.settings.workdir is not None and not any(e.startswith("HOME=") for e in declared):
            self._home = "/root" if self.settings.user.split(":")[0] == "0" else self.settings.workdir
        variables = dict(e.partition("=")[::2] for e in declared) | dict(self.settings.environment)
        own_image = self.settings.workdir is not None
        return ProtectedPaths.of(
            variables.get("PATH"),
            may_change=self.settings.may_change,
            workdir=self.settings.workdir or WORK_FOLDER,
            home=variables.get("HOME", self._home) if own_image else None,
        )


def _unpack_by_exec(container: Any, archive: bytes, folder: str) -> tuple[int | None, str]:
    """Unpack `archive` into the work folder with the container's own `tar` in an exec of its own, fed
    on its stdin; its exit code and output. For archives too big for one command of the shell.

    The engine's archive upload cannot write into a tmpfs (it writes beneath the mount), and the
    root filesystem is read-only; so the files go in from inside, as the container's user.
    """
    api = container.client.api
    execution = api.exec_create(container.id, ["tar", "-x", "-C", folder], stdin=True)
    attached = api.exec_start(execution["Id"], socket=True)
    connection = raw_socket(attached)
    output = CappedOutput(_PAGE)
    try:
        connection.sendall(archive)
        connection.shutdown(socket.SHUT_WR)  # tar's end of input
        for chunk in output_chunks(attached):
            output.add(chunk)
    finally:
        attached.close()
    return api.exec_inspect(execution["Id"]).get("ExitCode"), output.text()


def _archive(files: Mapping[str, bytes]) -> bytes:
    """The task's files as a tar, with an entry for each folder so that tar makes them as the user's."""
    folders = sorted({parent for relative in files for parent in _parents(relative)})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for relative, content in sorted(files.items()):
            info = tarfile.TarInfo(relative)
            info.size, info.mode = len(content), 0o644
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _footprint(files: Mapping[str, bytes]) -> int:
    """What `files` take in a tmpfs: whole pages for each file's content and for each folder."""
    folders = {parent for relative in files for parent in _parents(relative)}
    pages = sum(-(-len(content) // _PAGE) for content in files.values()) + len(folders)
    return pages * _PAGE


def _parents(relative: str) -> list[str]:
    parts = relative.split("/")[:-1]
    return ["/".join(parts[: n + 1]) for n in range(len(parts))]
