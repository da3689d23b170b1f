"""The local sandbox under bubblewrap: no network, only its folder writable, nothing outlives a command."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_env import CommandResult
from agent_env._error_types import SandboxUnavailableError
from agent_env.sandbox import LocalSandbox, LocalSandboxProvider, _bubblewrap as bubblewrap
from tst.support.waiting import eventually, running
from tst.unit.sandbox._local import in_sandbox, run

confined = pytest.mark.needs("bubblewrap")


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on loopback; its port."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield int(server.getsockname()[1])


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """Forget what the process learnt about bubblewrap, before and after the test."""
    bubblewrap._probe.cache_clear()
    bubblewrap._say_once.cache_clear()
    yield
    bubblewrap._probe.cache_clear()
    bubblewrap._say_once.cache_clear()


@confined
def test_a_confined_command_writes_only_its_folder_and_a_tmp_of_its_own(tmp_path: Path) -> None:
    """The rest of the machine is read-only; /tmp (where pytest's folders are) is a tmpfs of its own."""
    script = (
        "echo kept > here.txt && echo wrote-here; "
        "echo x > /etc/agent-env-test || echo refused-etc; "
        "echo x > /usr/agent-env-test || echo refused-usr; "
        f"echo x > {tmp_path}/beside.txt; echo x > /tmp/agent-env-bwrap-test && echo wrote-tmp"
    )

    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, bytes]:
        result = await run(sandbox, script)
        return result, (sandbox.root / "here.txt").read_bytes()

    result, kept = in_sandbox(tmp_path, act, isolation="bubblewrap")

    assert result.output.splitlines() == [
        "wrote-here",
        "bash: line 1: /etc/agent-env-test: Read-only file system",
        "refused-etc",
        "bash: line 1: /usr/agent-env-test: Read-only file system",
        "refused-usr",
        "wrote-tmp",
    ]
    assert kept == b"kept\n"
    assert not (tmp_path / "beside.txt").exists()
    assert not Path("/tmp/agent-env-bwrap-test").exists()
    assert not Path("/etc/agent-env-test").exists()


@pytest.mark.parametrize(
    ("isolation", "reached"),
    [
        pytest.param("bubblewrap", False, marks=confined, id="confined"),
        pytest.param("none", True, id="unconfined"),
    ],
)
def test_a_confined_command_cannot_reach_the_network_not_even_loopback(
    tmp_path: Path, listener: int, isolation: str, reached: bool
) -> None:
    async def act(sandbox: LocalSandbox) -> CommandResult:
        return await run(sandbox, f"echo hi > /dev/tcp/127.0.0.1/{listener} && echo reached")

    result = in_sandbox(tmp_path, act, isolation=isolation)

    assert ("reached" in result.output) is reached
    assert (result.exit_code == 0) is reached


@confined
def test_a_process_that_left_its_group_with_setsid_ends_with_the_confined_command(tmp_path: Path) -> None:
    async def act(sandbox: LocalSandbox) -> tuple[CommandResult, bool]:
        result = await run(sandbox, "setsid sleep 30.21 & echo started")
        return result, await eventually(lambda: running("30.21") == [])

    result, gone = in_sandbox(tmp_path, act, isolation="bubblewrap")

    assert result == CommandResult(0, "started\n")
    assert gone


def test_isolation_bubblewrap_without_bwrap_is_an_error_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    monkeypatch.setattr(bubblewrap.shutil, "which", lambda name: None)

    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        LocalSandboxProvider(isolation="bubblewrap")


def test_without_bwrap_the_local_sandbox_warns_it_is_unconfined_and_runs_commands_as_they_are(
    monkeypatch: pytest.MonkeyPatch, fresh_probe: None, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setattr(bubblewrap.shutil, "which", lambda name: None)

    with caplog.at_level(logging.WARNING, logger="agent_env.sandbox"):
        provider = LocalSandboxProvider(tmp_path)
    sandbox = asyncio.run(provider.create({}))
    result = asyncio.run(run(sandbox, "echo ran"))
    asyncio.run(sandbox.teardown())

    assert provider.bwrap is None and result == CommandResult(0, "ran\n")
    [warning] = [r.getMessage() for r in caplog.records]
    assert "not an isolation boundary" in warning and "apt-get install bubblewrap" in warning
