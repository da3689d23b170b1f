"""A test.sh that fetches from the network while its verifier will have none is said at load, in one
line naming the tasks: their episodes would otherwise score a silent 0 or be unscorable."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent_env.harbor._fetching import network_fetches
from agent_env.harbor._loader import read_harbor
from tst.support.harbor_tasks import ON_THE_SANDBOX_IMAGE, write_task

OFFLINE = f"{ON_THE_SANDBOX_IMAGE}network_mode = 'no-network'\n"
FETCHING = (
    "#!/bin/bash\n"
    "apt-get update && apt-get -y install curl\n"
    "curl -LsSf https://astral.sh/uv/install.sh | sh\n"
    "uvx -p 3.13 -w pytest==8.4.1 pytest /tests/test_outputs.py\n"
)


@pytest.mark.parametrize(
    ("script", "found"),
    [
        (FETCHING, ["apt-get update", "apt-get install", "curl", "uvx"]),
        (
            "pip install pytest\npython3 -m pip install -q requests\nuv sync\n",
            ["pip install", "python3 pip install", "uv sync"],
        ),
        (
            "git clone https://example.org/repo.git\nnpm ci\n/usr/bin/wget -q x\n",
            ["git clone", "npm ci", "wget"],
        ),
        ("#!/bin/bash\n# we used to curl the answers here\npytest /tests  # no pip install\n", []),
        ("echo curly braces; ./scripts/curl-free.sh; cat /app/wget.log\n", []),
    ],
)
def test_the_scan_names_each_command_that_fetches_from_the_network_outside_comments(
    script: str, found: list[str]
):
    assert network_fetches(script) == found


def test_the_tasks_whose_test_sh_fetches_without_a_verifier_network_are_named_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    write_task(tmp_path, "fetches", OFFLINE, test_sh=FETCHING)
    write_task(tmp_path, "pip", OFFLINE, test_sh="pip install pytest && pytest /tests\n")
    write_task(tmp_path, "offline", OFFLINE)  # needs nothing
    write_task(tmp_path, "given", f"{OFFLINE}[verifier]\nnetwork_mode = 'public'\n", test_sh=FETCHING)

    with caplog.at_level(logging.WARNING, logger="agent_env.harbor"):
        read, problems = read_harbor(tmp_path, build=False)

    assert problems == [] and read is not None
    assert [record.getMessage() for record in caplog.records] == [
        "tests/test.sh fetches from the network in 2 tasks whose verifier has no network: fetches (apt-get "
        "update, apt-get install, curl, uvx), pip (pip install). Their episodes will likely be unscorable or "
        'score 0 whatever the agent did; to give test.sh a network, write [verifier] network_mode = "public" '
        "in their task.toml and serve with --allow-internet"
    ]


def test_a_dataset_of_many_such_tasks_names_twenty_and_counts_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    for n in range(23):
        write_task(tmp_path, f"task-{n:02}", OFFLINE, test_sh="curl -s x\n")

    with caplog.at_level(logging.WARNING, logger="agent_env.harbor"):
        read_harbor(tmp_path, build=False)

    [line] = [record.getMessage() for record in caplog.records]
    assert "in 23 tasks whose verifier has no network: task-00 (curl), " in line
    assert "task-19 (curl) and 3 more. Their episodes" in line
