"""task.toml's fields against a real engine: each phase's network switched at the seal (what the engine
reports and what the container sees), warm pools' containers in the agent's phase until then, the
collect commands run before test.sh, and `agent-env check` fitting the tasks to the engine's CPUs and
memory.

No traffic leaves loopback here: the network a phase gets is one the test makes with `internal=True`
(no route out of it), removed after; the engine runs with `--bridge=none`, so its default bridge,
what `--allow-internet` gives elsewhere, is not there to test.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env import Episode, load_bundle
from agent_env._error_types import SandboxUnavailableError
from agent_env._task import Task
from agent_env.cli import main
from agent_env.sandbox import SandboxesByTask
from agent_env.sandbox._docker import DockerSandbox, DockerSandboxProvider
from tst.support.harbor_tasks import ON_THE_SANDBOX_IMAGE, write_task

INTERFACES = "ls /sys/class/net"
FILL_S = 60.0
PHASES = {
    "agent offline, verifier online": ("verifier", False, True),
    "agent online, verifier offline": ("agent", True, False),
}
"""The phase whose own network_mode is "public" over the task's "no-network", and whether each phase
(agent, verifier) then asks for the network."""
SEES_BOTH = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "agent=$(tr '\\n' ' ' < /work/agent-net); verifier=$(ls /sys/class/net | tr '\\n' ' ')\n"
    'echo "agent: $agent; verifier: $verifier"\n'
    'if [ "$agent" = "lo " ] && [ "$verifier" = "eth0 lo " ]; then echo 1; else echo 0; fi '
    "> /logs/verifier/reward.txt\n"
)
"""1 when the agent's turns had no network and test.sh has one."""


@pytest.fixture
def internal_network(docker_client: Any) -> Iterator[str]:
    """A network whose containers reach each other alone: nothing routes out of it."""
    network = docker_client.networks.create(f"agent-env-test-{uuid.uuid4().hex[:12]}", internal=True)
    try:
        yield str(network.name)
    finally:
        network.remove()


def phased_task(tmp_path: Path, phases: str, test_sh: str = SEES_BOTH) -> Task:
    section, _, _ = PHASES[phases]
    toml = f'{ON_THE_SANDBOX_IMAGE}network_mode = "no-network"\n[{section}]\nnetwork_mode = "public"\n'
    return load_bundle(write_task(tmp_path, "phased", toml, test_sh=test_sh)).tasks("train")[0]


def networks_of(sandbox: DockerSandbox) -> list[str]:
    """The networks the engine says the container is on (`none` included)."""
    sandbox.container.reload()
    return sorted(sandbox.container.attrs["NetworkSettings"]["Networks"])


async def seen(sandbox: DockerSandbox) -> list[str]:
    """The network interfaces the container sees, and their states."""
    answer = await sandbox.run(
        f"for i in $({INTERFACES}); do echo $i=$(cat /sys/class/net/$i/operstate); done",
        timeout_s=10,
        max_output_bytes=4096,
    )
    return answer.output.split()


@pytest.mark.parametrize("phases", list(PHASES))
def test_each_phase_is_on_the_network_it_asks_for_switched_through_the_engine_at_the_seal(
    tmp_path: Path, internal_network: str, phases: str
):
    task = phased_task(tmp_path, phases)
    _, agent, verifier = PHASES[phases]
    sandboxes = SandboxesByTask([task.sandbox_settings], allow_network=True, network=internal_network)
    on = {True: [internal_network], False: ["none"]}
    sees = {True: ["eth0=up", "lo=unknown"], False: ["lo=unknown"]}

    async def play() -> list[Any]:
        await sandboxes.start()
        sandbox = await sandboxes.provider_for(task.sandbox_settings).create({})
        assert isinstance(sandbox, DockerSandbox)
        try:
            before = networks_of(sandbox), await seen(sandbox)
            await sandbox.seal()
            return [before, (networks_of(sandbox), await seen(sandbox))]
        finally:
            await sandbox.teardown()
            await sandboxes.close()

    before, after = asyncio.run(play())

    assert before == (on[agent], sees[agent])
    # A container that left its network is on none at all: its loopback alone, as in `none`.
    assert after == ([internal_network] if verifier else [], sees[verifier])


def test_a_warm_pools_containers_wait_in_the_agents_phase_and_switch_at_their_own_seal(
    tmp_path: Path, internal_network: str
):
    task = phased_task(tmp_path, "agent offline, verifier online")
    sandboxes = SandboxesByTask([task.sandbox_settings], warm=1, allow_network=True, network=internal_network)
    [pool] = sandboxes.pools.values()

    async def play() -> list[Any]:
        await sandboxes.start()
        try:
            for _ in range(int(FILL_S / 0.05)):
                if pool.status().ready:
                    break
                await asyncio.sleep(0.05)
            sandbox = await pool.create({})
            try:
                before = networks_of(sandbox), await seen(sandbox)
                await sandbox.seal()
                return [pool.status().handed_out, before, (networks_of(sandbox), await seen(sandbox))]
            finally:
                await sandbox.teardown()
        finally:
            await sandboxes.close()

    handed_out, before, after = asyncio.run(play())

    assert handed_out == 1
    assert before == (["none"], ["lo=unknown"])
    assert after == ([internal_network], ["eth0=up", "lo=unknown"])


@pytest.mark.parametrize(("allowed", "score"), [(True, 1.0), (False, 0.0)])
def test_test_sh_has_a_network_the_agent_did_not_only_where_the_server_allows_it(
    tmp_path: Path, internal_network: str, allowed: bool, score: float
):
    task = phased_task(tmp_path, "agent offline, verifier online")
    sandboxes = SandboxesByTask([task.sandbox_settings], allow_network=allowed, network=internal_network)

    async def play() -> float | None:
        await sandboxes.start()
        episode = Episode(task, provider=sandboxes.provider_for(task.sandbox_settings))
        try:
            await episode.deploy()
            await episode.call_tool("bash", {"command": f"{INTERFACES} > /work/agent-net"})
            return (await episode.end_turn("done")).score
        finally:
            await episode.teardown()
            await sandboxes.close()

    assert asyncio.run(play()) == score


def test_a_network_the_engine_lacks_is_an_error_saying_how_to_get_one(tmp_path: Path, docker_client: Any):
    task = phased_task(tmp_path, "agent online, verifier offline")
    provider = DockerSandboxProvider(
        task.sandbox_settings, client=docker_client, allow_network=True, network="agent-env-no-such-network"
    )

    with pytest.raises(SandboxUnavailableError) as refused:
        asyncio.run(provider.create({}))

    assert str(refused.value).startswith(
        "the Docker engine could not put a sandbox on its network 'agent-env-no-such-network' ("
    )
    assert "start the engine with that network" in str(refused.value)


COLLECTS = (
    '\n[[verifier.collect]]\ncommand = "grep -c . answer > /logs/verifier/lines"\n'
    '\n[[verifier.collect]]\ncommand = "exit 3"\n'
)
PLANTED = "mkdir -p /logs/verifier; echo 9 > /logs/verifier/lines"
"""What the agent leaves where a collect command writes: emptied before it runs."""
READS_COLLECTED = (
    '#!/bin/bash\n[ "$(cat /logs/verifier/lines)" = 2 ] && echo 1 > /logs/verifier/reward.txt '
    "|| echo 0 > /logs/verifier/reward.txt\n"
)


def test_the_collect_commands_run_after_the_agent_before_test_sh_which_reads_what_they_wrote(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    toml = f"{ON_THE_SANDBOX_IMAGE}allow_internet = false\n{COLLECTS}"
    task = load_bundle(write_task(tmp_path, "collects", toml, test_sh=READS_COLLECTED)).tasks("train")[0]
    episode = Episode(task)

    async def play() -> float | None:
        try:
            await episode.deploy()
            await episode.call_tool(
                "bash",
                {"command": f"printf 'a\\nb\\n' > answer; {PLANTED}"},
            )
            return (await episode.end_turn("done")).score
        finally:
            await episode.teardown()

    with caplog.at_level(logging.WARNING, logger="agent_env.harbor"):
        score = asyncio.run(play())

    assert score == 1.0
    assert [r.getMessage() for r in caplog.records] == [
        "task 'collects': its [[verifier.collect]] command 2 failed (exit 3: ''); test.sh ran all the same"
    ]


def test_agent_env_check_clamps_cpus_to_the_engines_in_one_line_and_refuses_memory_it_lacks(
    tmp_path: Path, docker_client: Any, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
):
    info = docker_client.info()
    cpus, memory_mb = info["NCPU"], info["MemTotal"] // 2**20
    fits = tmp_path / "fits"
    write_task(fits, "wide", f"{ON_THE_SANDBOX_IMAGE}cpus = {cpus * 2}\nmemory_mb = 256\n")
    write_task(fits, "narrow", f"{ON_THE_SANDBOX_IMAGE}cpus = 1\nmemory_mb = 256\n")
    too_big = write_task(tmp_path, "too-big", f"{ON_THE_SANDBOX_IMAGE}memory_mb = {memory_mb + 1}\n")

    with caplog.at_level(logging.WARNING, logger="agent_env.harbor"):
        checked = main(["check", str(fits)])
    fits_said = capsys.readouterr()
    refused = main(["check", str(too_big)])
    refused_said = capsys.readouterr()

    assert checked == 0 and fits_said.out == "fits: ok: 0 envs, 1 agents, tasks: train 2\n"
    assert [r.getMessage() for r in caplog.records] == [
        f"more CPUs than the Docker engine has ({cpus}) are asked for by 1 task: wide ({cpus * 2}); each "
        f"gets the engine's {cpus}, all a larger quota could give it (write cpus = {cpus} or less to say "
        "so, or load them where the engine has more)"
    ]
    assert load_bundle(fits).tasks("train")[1].sandbox_settings.cpus == cpus
    assert refused != 0
    assert (
        f"task.toml: environment.memory_mb: asks for {memory_mb + 1} MB, and the Docker engine has "
        f"{memory_mb} MB in all: write memory_mb = {memory_mb} or less" in refused_said.err
    )
