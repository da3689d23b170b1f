"""The docker sandbox provider against a real engine: one container per episode, limits, deadlines."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import tarfile
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from agent_env._error_types import SandboxUnavailableError
from agent_env.sandbox import DockerSandbox, DockerSandboxProvider, SandboxConfig
from tst.integration._containers import sandbox_containers

T = TypeVar("T")
CAP = 16 * 1024


def settings(**options: Any) -> SandboxConfig:
    return SandboxConfig(provider="docker", **options)


def in_sandbox(
    provider: DockerSandboxProvider, files: dict[str, bytes], play: Callable[[DockerSandbox], Awaitable[T]]
) -> T:
    """Make a sandbox with `files`, run `play` in it, and tear it down whatever happened."""

    async def run() -> T:
        sandbox = await provider.create(files)
        try:
            return await play(sandbox)
        finally:
            await sandbox.teardown()

    return asyncio.run(run())


@pytest.fixture
def provider(docker_client: Any, sandbox_image: str) -> DockerSandboxProvider:
    return DockerSandboxProvider(settings(image=sandbox_image), client=docker_client)


def test_the_tasks_files_are_in_the_work_folder_before_the_first_command(
    provider: DockerSandboxProvider,
) -> None:
    files = {"manifest.csv": b"crate,weight\nC1,4\n", "notes/day 1.txt": b"calm seas\n"}

    async def play(sandbox: DockerSandbox) -> Any:
        return await sandbox.run(
            "pwd; cat manifest.csv 'notes/day 1.txt'", timeout_s=10, max_output_bytes=CAP
        )

    result = in_sandbox(provider, files, play)

    assert result.exit_code == 0
    assert result.output == "/work\ncrate,weight\nC1,4\ncalm seas\n"


@pytest.mark.parametrize("size", [1000, 300_000], ids=["through-the-shell", "through-an-exec"])
def test_the_tasks_files_arrive_byte_for_byte_whether_they_fit_in_one_command_or_not(
    provider: DockerSandboxProvider, size: int
) -> None:
    content = bytes(range(256)) * (size // 256) + b"'\"$(x)\0"
    files = {"data/blob.bin": content, "quote's.txt": b"it's\n"}

    async def play(sandbox: DockerSandbox) -> Any:
        return await sandbox.run(
            'sha256sum data/blob.bin; cat "quote\'s.txt"', timeout_s=10, max_output_bytes=CAP
        )

    result = in_sandbox(provider, files, play)

    assert result.exit_code == 0
    assert result.output == f"{hashlib.sha256(content).hexdigest()}  data/blob.bin\nit's\n"


def test_a_command_answers_with_its_exit_code_and_its_output_and_stderr_together(
    provider: DockerSandboxProvider,
) -> None:
    async def play(sandbox: DockerSandbox) -> Any:
        return await sandbox.run("echo out; echo err >&2; exit 3", timeout_s=10, max_output_bytes=CAP)

    result = in_sandbox(provider, {}, play)

    assert (result.exit_code, result.timed_out) == (3, False)
    assert sorted(result.output.split()) == ["err", "out"]


def test_a_command_past_its_deadline_is_killed_and_nothing_it_started_runs_on(
    provider: DockerSandboxProvider,
) -> None:
    async def play(sandbox: DockerSandbox) -> tuple[Any, Any]:
        late = await sandbox.run("echo begun; sleep 30", timeout_s=0.5, max_output_bytes=CAP)
        after = await sandbox.run(
            "ps -o comm | grep -c '^sleep 30' || true", timeout_s=10, max_output_bytes=CAP
        )
        return late, after

    late, after = in_sandbox(provider, {}, play)

    assert (late.exit_code, late.timed_out) == (None, True)
    assert late.output == "begun\n"
    assert "ran past its 0.5 s deadline" in late.render(0.5)
    assert after.output == "0\n"


def test_a_background_process_a_command_started_is_killed_when_the_command_returns(
    provider: DockerSandboxProvider,
) -> None:
    async def play(sandbox: DockerSandbox) -> tuple[Any, Any]:
        started = await sandbox.run("sleep 300 & echo $!", timeout_s=10, max_output_bytes=CAP)
        pid = started.output.strip()
        return started, await sandbox.run(
            f"kill -0 {pid} 2>/dev/null && echo alive || echo gone", timeout_s=10, max_output_bytes=CAP
        )

    started, check = in_sandbox(provider, {}, play)

    assert started.exit_code == 0
    assert check.output == "gone\n"


def test_output_past_the_cap_is_cut_and_the_rest_counted(provider: DockerSandboxProvider) -> None:
    async def play(sandbox: DockerSandbox) -> Any:
        return await sandbox.run("head -c 100000 /dev/zero | tr '\\0' x", timeout_s=10, max_output_bytes=1000)

    result = in_sandbox(provider, {}, play)

    assert result.exit_code == 0 and result.truncated
    assert result.output == "x" * 1000 + "\n[output truncated: 99000 more bytes]"


def test_a_container_has_no_network_no_capabilities_and_the_configured_limits(
    docker_client: Any, sandbox_image: str
) -> None:
    limited = DockerSandboxProvider(
        settings(image=sandbox_image, cpus=0.5, memory_mb=64, pids_limit=32), client=docker_client
    )

    async def play(sandbox: DockerSandbox) -> tuple[dict[str, Any], Any, Any, Any]:
        host = docker_client.api.inspect_container(sandbox.id)["HostConfig"]
        interfaces = await sandbox.run("ls /sys/class/net", timeout_s=10, max_output_bytes=CAP)
        forks = await sandbox.run("for i in $(seq 64); do sleep 5 & done", timeout_s=30, max_output_bytes=CAP)
        after = await sandbox.run("echo still here", timeout_s=10, max_output_bytes=CAP)
        return host, interfaces, forks, after

    host, interfaces, forks, after = in_sandbox(limited, {}, play)

    assert host["NetworkMode"] == "none"
    assert (host["NanoCpus"], host["Memory"], host["PidsLimit"]) == (500_000_000, 64 * 2**20, 32)
    assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
    assert interfaces.output.split() == ["lo"]
    assert (
        forks.exit_code != 0 and "fork" in forks.output and "Resource temporarily unavailable" in forks.output
    )
    assert (after.exit_code, after.output) == (0, "still here\n")


def test_a_command_forking_without_end_past_its_deadline_is_stopped_with_all_pids_taken_and_the_shell_runs_on(
    docker_client: Any, sandbox_image: str
) -> None:
    limited = DockerSandboxProvider(settings(image=sandbox_image, pids_limit=32), client=docker_client)

    async def play(sandbox: DockerSandbox) -> list[Any]:
        return [
            await sandbox.run("echo $PPID", timeout_s=10, max_output_bytes=CAP),
            await sandbox.run("bomb() { bomb | bomb & }; bomb; sleep 300", timeout_s=2, max_output_bytes=CAP),
            # ps in a command substitution, so that this command's bash does not exec it
            await sandbox.run(
                'echo $PPID; running=$(ps -o pid,ppid,args); echo "$running"',
                timeout_s=10,
                max_output_bytes=CAP,
            ),
        ]

    before, bomb, after = in_sandbox(limited, {}, play)

    assert (bomb.exit_code, bomb.timed_out) == (None, True)
    assert after.exit_code == 0, after.output
    shell, _header, *table = after.output.splitlines()
    processes = [row.split(maxsplit=2) for row in table]
    init = next(args for pid, _, args in processes if pid == "1")
    # The init's own fork (its `sleep`, killed with the rest after each command, started again, and
    # a bash for as long as it has not exec'd) is no leftover.
    parents_of_bashes = [
        ppid for _, ppid, args in processes if args.split()[0].endswith("bash") and args != init
    ]
    assert shell == before.output.strip(), (
        f"the shell was replaced; the bomb's output ends: {bomb.output[-300:]}"
    )
    assert parents_of_bashes == ["0", shell], after.output  # the same shell, this command


def test_commands_run_as_a_user_who_owns_the_tasks_files_on_a_read_only_root_with_only_work_and_tmp_writable(
    provider: DockerSandboxProvider, docker_client: Any
) -> None:
    files = {"manifest.csv": b"C1,4\n", "logs/day 1/notes.txt": b"calm\n"}
    script = (
        "id -u; id -g; stat -c '%u %n' .; stat -c '%u %a %n' logs 'logs/day 1' 'logs/day 1/notes.txt'; "
        "echo C2,5 >> manifest.csv && echo > 'logs/day 1/more.txt' && echo > /tmp/t && echo writable; "
        "for place in / /etc /bin /usr/bin; do touch $place/x 2>&1; done; true"
    )

    async def play(sandbox: DockerSandbox) -> tuple[dict[str, Any], Any]:
        host = docker_client.api.inspect_container(sandbox.id)["HostConfig"]
        return host, await sandbox.run(script, timeout_s=10, max_output_bytes=CAP)

    host, result = in_sandbox(provider, files, play)

    lines = result.output.splitlines()
    assert lines[:2] == ["1000", "1000"]
    assert lines[2:6] == [
        "1000 .",
        "1000 755 logs",
        "1000 755 logs/day 1",
        "1000 644 logs/day 1/notes.txt",
    ]
    assert lines[6] == "writable"
    assert len(lines[7:]) == 4 and all("Read-only file system" in line for line in lines[7:])
    assert host["ReadonlyRootfs"] is True
    assert set(host["Tmpfs"]) == {"/work", "/tmp"}


def test_a_command_that_fills_the_work_folder_gets_no_space_left_and_the_sandbox_goes_on(
    docker_client: Any, sandbox_image: str
) -> None:
    small = DockerSandboxProvider(settings(image=sandbox_image, work_mb=4), client=docker_client)

    async def play(sandbox: DockerSandbox) -> tuple[Any, Any, str]:
        filled = await sandbox.run(
            "dd if=/dev/zero of=big bs=1M count=64; dd if=/dev/zero of=/tmp/big bs=1M count=64",
            timeout_s=30,
            max_output_bytes=CAP,
        )
        after = await sandbox.run(
            "rm big && echo freed > note && cat note", timeout_s=10, max_output_bytes=CAP
        )
        user = docker_client.api.inspect_container(sandbox.id)["Config"]["User"]
        return filled, after, user

    filled, after, user = in_sandbox(small, {}, play)

    assert filled.exit_code != 0 and filled.output.count("No space left on device") == 2
    assert (after.exit_code, after.output) == (0, "freed\n")
    assert user == "1000:1000"


def test_task_files_too_big_for_the_work_folder_fail_the_deploy_saying_so_and_leave_no_container(
    docker_client: Any, sandbox_image: str
) -> None:
    small = DockerSandboxProvider(settings(image=sandbox_image, work_mb=1), client=docker_client)

    fits = asyncio.run(small.create({"data.bin": b"x" * (2**20 - 4096)}))
    asyncio.run(fits.teardown())
    asyncio.run(small.close())
    with pytest.raises(
        RuntimeError, match=re.escape("take 2.0 MiB in the work folder, which holds 1 MiB")
    ) as failed:
        asyncio.run(small.create({"data.bin": b"x" * (2 * 2**20)}))

    assert "raise [sandbox] work_mb in bundle.toml" in str(failed.value)
    assert sandbox_containers(docker_client) == []


def test_teardown_removes_the_container_even_when_it_already_died_and_a_second_teardown_does_nothing(
    provider: DockerSandboxProvider, docker_client: Any
) -> None:
    async def play() -> None:
        sandbox = await provider.create({})
        assert sandbox_containers(docker_client) == [sandbox.id]
        docker_client.containers.get(sandbox.id).kill()
        await sandbox.teardown()
        await sandbox.teardown()
        await provider.close()  # the removal runs in the background: close waits for it

    asyncio.run(play())

    assert sandbox_containers(docker_client) == []


def test_teardown_leaves_nothing_the_episode_started_running_and_only_the_container_s_removal_to_wait_for(
    provider: DockerSandboxProvider, docker_client: Any
) -> None:
    """Between commands the shell has killed what they left: only the container's init and the idle
    shell remain, so the removal runs in the background. A command still running is killed first."""

    def processes(container: str) -> list[str] | None:
        try:
            return [row[-1] for row in docker_client.api.top(container)["Processes"]]
        except Exception:  # stopped or removed already
            return None

    async def play() -> tuple[list[str] | None, bool, int]:
        idle, busy = await provider.create({}), await provider.create({})
        await idle.run("sleep 300.5 & sleep 301.5 &", timeout_s=10, max_output_bytes=CAP)
        running = asyncio.ensure_future(busy.run("sleep 302.5", timeout_s=600, max_output_bytes=CAP))
        await asyncio.sleep(0.5)
        await idle.teardown()
        left = processes(idle.id)
        await busy.teardown()
        stopped = processes(busy.id) is None
        pending = provider.removals.pending
        await running
        await provider.close()
        return left, stopped, pending

    left, stopped, pending = asyncio.run(play())

    assert left is None or not [p for p in left if "sleep 30" in p]
    assert stopped
    assert pending <= 2
    assert sandbox_containers(docker_client) == []


def test_a_command_in_a_torn_down_sandbox_is_refused(provider: DockerSandboxProvider) -> None:
    async def play() -> None:
        sandbox = await provider.create({})
        await sandbox.teardown()
        await sandbox.run("true", timeout_s=10, max_output_bytes=CAP)

    with pytest.raises(RuntimeError, match="torn down"):
        asyncio.run(play())


def test_an_image_the_engine_lacks_is_an_error_when_the_provider_is_made_naming_how_to_build_it(
    docker_client: Any,
) -> None:
    with pytest.raises(
        SandboxUnavailableError, match=r"no image 'agent-env-missing:1'.*agent-env sandbox-image"
    ):
        DockerSandboxProvider(settings(image="agent-env-missing:1"), client=docker_client)


@pytest.fixture
def image_without_bash(docker_client: Any) -> Iterator[str]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("etc/hostname")
        tar.addfile(info, io.BytesIO(b""))
    docker_client.api.import_image_from_data(buffer.getvalue(), repository="agent-env-no-bash", tag="test")
    yield "agent-env-no-bash:test"
    docker_client.images.remove("agent-env-no-bash:test", force=True)


def test_a_container_that_cannot_start_fails_the_deploy_and_is_removed(
    docker_client: Any, image_without_bash: str
) -> None:
    broken = DockerSandboxProvider(settings(image=image_without_bash), client=docker_client)

    with pytest.raises(Exception, match="/bin/bash"):
        asyncio.run(broken.create({"a.txt": b"a"}))

    assert sandbox_containers(docker_client) == []


def test_a_container_the_engine_made_although_the_call_to_make_it_failed_is_removed(
    docker_client: Any, sandbox_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docker.models.containers import ContainerCollection

    made = ContainerCollection.create

    def made_then_timed_out(self: Any, *args: Any, **kwargs: Any) -> Any:
        made(self, *args, **kwargs)
        raise TimeoutError("the engine took too long to answer")

    monkeypatch.setattr(ContainerCollection, "create", made_then_timed_out)
    provider = DockerSandboxProvider(settings(image=sandbox_image), client=docker_client)

    with pytest.raises(TimeoutError):
        asyncio.run(provider.create({}))

    assert sandbox_containers(docker_client) == []


def test_commands_cut_short_while_running_never_starve_the_teardowns_that_end_them(
    provider: DockerSandboxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trainer killed mid-command cancels each call; the commands run on until teardown removes
    their containers. More of them than the sync pool has threads must not hold the teardowns up."""
    from agent_env import _threads

    monkeypatch.setattr(_threads, "_pool", _threads.Workers(2))

    async def play() -> None:
        sandboxes = [await provider.create({}) for _ in range(3)]
        commands = [
            asyncio.ensure_future(s.run("sleep 300", timeout_s=600, max_output_bytes=CAP)) for s in sandboxes
        ]
        await asyncio.sleep(1.0)
        for command in commands:
            command.cancel()
        await asyncio.wait_for(asyncio.gather(*(s.teardown() for s in sandboxes)), 30)

    asyncio.run(play())


def test_commands_run_in_one_shell_started_once_yet_share_only_the_work_folder(
    provider: DockerSandboxProvider,
) -> None:
    async def play(sandbox: DockerSandbox) -> list[Any]:
        return [
            await sandbox.run(command, timeout_s=10, max_output_bytes=CAP)
            for command in (
                "echo $PPID; export CARGO=lead; cd /tmp; echo ok > kept",
                'echo $PPID "[$CARGO]"; pwd; cat /tmp/kept',
            )
        ]

    first, second = in_sandbox(provider, {}, play)

    shell = first.output.strip()
    assert second.output.split() == [shell, "[]", "/work", "ok"]


def test_after_a_command_that_killed_its_shell_the_next_runs_in_a_new_one_and_one_past_its_deadline_keeps_it(
    provider: DockerSandboxProvider,
) -> None:
    async def play(sandbox: DockerSandbox) -> list[Any]:
        return [
            await sandbox.run("echo $PPID", timeout_s=10, max_output_bytes=CAP),
            await sandbox.run("echo going; kill -9 -1", timeout_s=10, max_output_bytes=CAP),
            await sandbox.run("echo $PPID", timeout_s=10, max_output_bytes=CAP),
            await sandbox.run("sleep 30", timeout_s=0.5, max_output_bytes=CAP),
            await sandbox.run("echo $PPID", timeout_s=10, max_output_bytes=CAP),
        ]

    first, killer, second, late, third = in_sandbox(provider, {}, play)

    assert (killer.exit_code, killer.timed_out) == (None, False) and killer.output.startswith("going")
    assert killer.render(10).endswith("[killed: the shell that ran the command ended under it]")
    assert late.timed_out
    assert first.output != second.output == third.output


def test_the_containers_init_runs_no_program_from_its_disk_so_one_the_agent_replaced_never_runs(
    docker_client: Any, sandbox_image: str
) -> None:
    root = DockerSandboxProvider(
        settings(image=sandbox_image, workdir="/work", user="0:0"), client=docker_client
    )
    shim = (
        "printf '#!/bin/bash\\ntouch /tmp/ran-by-init\\nexec /bin/busybox sleep 300\\n' > {0}; chmod 755 {0}"
    )
    replace = " && ".join(shim.format(path) for path in ("/bin/sleep", "/usr/bin/sleep"))

    async def play(sandbox: DockerSandbox) -> Any:
        await sandbox.run(f"rm -f /bin/sleep /usr/bin/sleep; {replace}", timeout_s=10, max_output_bytes=CAP)
        for _ in range(3):  # each command's end kills every process but the init's, which it starts again
            await sandbox.run("true", timeout_s=10, max_output_bytes=CAP)
        return await sandbox.run("ls /tmp; ps -o args", timeout_s=10, max_output_bytes=CAP)

    result = in_sandbox(root, {}, play)

    assert "ran-by-init" not in result.output
    assert "sleep 300" not in result.output


def test_once_sealed_commands_run_in_a_new_exec_with_the_verifiers_environment_and_nothing_the_agent_started(
    provider: DockerSandboxProvider,
) -> None:
    async def play(sandbox: DockerSandbox) -> tuple[Any, Any]:
        agents = await sandbox.run("echo $$ $HOME", timeout_s=10, max_output_bytes=CAP)
        await sandbox.seal()
        await sandbox.seal()  # once is enough
        verifiers = await sandbox.run(
            "echo $$ $HOME $PYTHONNOUSERSITE $PYTHONPYCACHEPREFIX $XDG_CACHE_HOME; ps -o args | grep -v ps",
            timeout_s=10,
            max_output_bytes=CAP,
        )
        return agents, verifiers

    agents, verifiers = in_sandbox(provider, {}, play)

    agent_shell, agent_home = agents.output.split()
    first, *processes = verifiers.output.splitlines()
    shell, home, no_user_site, bytecode, caches = first.split()
    assert agent_home == "/work"
    assert shell != agent_shell
    assert home.startswith("/tmp/agent-env-verifier-") and home.endswith("/home")
    assert (no_user_site, bytecode, caches) == (
        "1",
        home.replace("/home", "/pycache"),
        home.replace("/home", "/cache"),
    )
    assert sum("agent-env-shell" in line for line in processes) == 1  # the verifiers' shell alone


def test_a_sealed_container_whose_system_files_the_agent_changed_refuses_its_verifiers_naming_them(
    docker_client: Any, sandbox_image: str
) -> None:
    from agent_env._error_types import EpisodeError

    root = DockerSandboxProvider(
        settings(image=sandbox_image, workdir="/work", user="0:0"), client=docker_client
    )

    async def play(sandbox: DockerSandbox) -> EpisodeError:
        await sandbox.run(
            "echo evil > /etc/ld.so.preload; echo fine > /work/out", timeout_s=10, max_output_bytes=CAP
        )
        with pytest.raises(EpisodeError) as refused:
            await sandbox.seal()
        return refused.value

    error = in_sandbox(root, {}, play)

    assert error.code == "SYSTEM_CHANGED"
    assert "/etc/ld.so.preload (added)" in error.message and "/work/out" not in error.message


def test_what_an_images_entrypoint_writes_as_its_container_starts_is_not_taken_for_the_agents_doing(
    docker_client: Any, sandbox_image: str, tmp_path: Any
) -> None:
    from agent_env._error_types import EpisodeError

    entry = '#!/bin/bash\\nsleep 0.3\\necho configured > /etc/entry.conf\\nexec "$@"\\n'
    (tmp_path / "Dockerfile").write_text(
        f"FROM {sandbox_image}\nRUN printf '{entry}' > /entry.sh && chmod 755 /entry.sh\n"
        'ENTRYPOINT ["/entry.sh"]\n'
    )
    tag = "agent-env-test-entrypoint:latest"
    docker_client.images.build(path=str(tmp_path), tag=tag, rm=True)
    provider = DockerSandboxProvider(settings(image=tag, workdir="/work", user="0:0"), client=docker_client)

    async def honest(sandbox: DockerSandbox) -> None:
        await sandbox.run("echo done > /work/out", timeout_s=10, max_output_bytes=CAP)
        await sandbox.seal()

    async def changes_etc(sandbox: DockerSandbox) -> EpisodeError:
        await sandbox.run("echo mine > /etc/other.conf", timeout_s=10, max_output_bytes=CAP)
        with pytest.raises(EpisodeError) as refused:
            await sandbox.seal()
        return refused.value

    try:
        in_sandbox(provider, {}, honest)
        error = in_sandbox(provider, {}, changes_etc)
    finally:
        docker_client.images.remove(tag, force=True)

    assert "/etc/other.conf (added)" in error.message
    assert "/etc/entry.conf" not in error.message
