"""Every task.toml field that changes what a task may reach is applied or refused at load, never
ignored: each phase's network, the fields a task cannot run with here (each with why and what to
write), and the fields run without, said once per dataset."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent_env._task import Task
from agent_env.harbor._fields import ALLOWLIST
from agent_env.harbor._loader import read_harbor
from agent_env.harbor._verifier import Collect, HarborTests
from tst.support.harbor_tasks import ON_THE_SANDBOX_IMAGE, write_task


def loaded(folder: Path) -> Task:
    read, problems = read_harbor(folder, build=False)
    assert problems == [] and read is not None
    [task] = read.splits["train"]
    return task


def refused(folder: Path) -> list[str]:
    read, problems = read_harbor(folder, build=False)
    assert read is None
    return [str(problem) for problem in problems]


@pytest.mark.parametrize(
    ("environment", "agent", "verifier", "phases"),
    [
        ("", "", "", (True, True)),  # Harbor's default: the public network
        ('network_mode = "no-network"', "", "", (False, False)),
        ("allow_internet = false", "", "", (False, False)),  # the deprecated spelling
        ("allow_internet = true", "", "", (True, True)),
        ('allow_internet = false\nnetwork_mode = "public"', "", "", (True, True)),  # network_mode wins
        ('network_mode = "no-network"', "", 'network_mode = "public"', (False, True)),
        ('network_mode = "public"', 'network_mode = "no-network"', "", (False, True)),
        ("", 'network_mode = "no-network"', 'network_mode = "no-network"', (False, False)),
        ("allow_internet = false", 'network_mode = "public"', "", (True, False)),
    ],
)
def test_each_phase_gets_its_own_network_mode_else_the_environments_as_harbor_resolves_it(
    tmp_path: Path, environment: str, agent: str, verifier: str, phases: tuple[bool, bool]
):
    toml = f"{ON_THE_SANDBOX_IMAGE}{environment}\n[agent]\n{agent}\n[verifier]\n{verifier}\n"

    settings = loaded(write_task(tmp_path, "task", toml)).sandbox_settings

    assert (settings.network, settings.verifiers_network) == phases
    assert settings.asks_network is any(phases)


def test_a_task_asking_the_same_of_both_phases_has_the_settings_it_had_before_phases_existed(tmp_path: Path):
    settings = loaded(
        write_task(tmp_path, "task", f"{ON_THE_SANDBOX_IMAGE}allow_internet = false\n")
    ).sandbox_settings

    assert (settings.network, settings.verifier_network) == (False, None)


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]', "environment.network_mode"),
        ('allowed_hosts = ["pypi.org"]', "environment.allowed_hosts"),
        ('\n[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]', "agent.network_mode"),
        ('\n[agent]\nallowed_hosts = ["pypi.org"]', "agent.allowed_hosts"),
        ('\n[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]', "verifier.network_mode"),
        ('network_mode = "no-network"\n[verifier]\nallowed_hosts = ["pypi.org"]', "verifier.allowed_hosts"),
    ],
)
def test_an_allowlist_of_hosts_in_any_phase_is_refused_saying_why_and_what_to_write_instead(
    tmp_path: Path, toml: str, field: str
):
    problems = refused(write_task(tmp_path, "task", f"{ON_THE_SANDBOX_IMAGE}{toml}\n"))

    assert problems == [f"task.toml: {field}: {ALLOWLIST}"]
    assert 'Write network_mode = "public"' in ALLOWLIST and "--allow-internet" in ALLOWLIST


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            'os = "windows"',
            "task.toml: environment.os: Windows containers are not supported: a task runs in a Linux "
            "container, driven by its bash. Run it with Harbor on a Windows host",
        ),
        (
            "gpus = 2",
            "task.toml: environment.gpus: GPUs are not supported: a container here gets no GPU device. If "
            "the task runs on CPUs, write gpus = 0 and remove gpu_types; else run it with Harbor on a "
            "backend with GPUs",
        ),
        (
            'gpu_types = ["H100"]',
            "task.toml: environment.gpus: GPUs are not supported",
        ),
        (
            'tpu = { type = "v5e", topology = "2x2" }',
            "task.toml: environment.tpu: TPUs are not supported: a container here gets no accelerator. If "
            "the task runs on CPUs, remove [environment.tpu]; else run it with Harbor on a backend with TPUs",
        ),
        (
            '\n[verifier]\nenvironment_mode = "separate"',
            "task.toml: verifier.environment_mode: a separate verifier environment is not supported: test.sh "
            "runs in the task's own container once the agent's turns are over, its changes checked first. "
            'Write environment_mode = "shared" if test.sh can run there',
        ),
        (
            '\n[verifier.environment]\ndocker_image = "checker:1"',
            "task.toml: verifier.environment: a separate verifier environment is not supported",
        ),
        (
            '\n[verifier.continuous]\nwatch_dir = "/app"',
            "task.toml: verifier.continuous: continuous verification is not supported: test.sh runs once, "
            "after the agent's last turn. Remove [verifier.continuous] (or write enabled = false)",
        ),
        (
            '\n[[verifier.collect]]\ncommand = "pg_dump app > /logs/dump.sql"\nservice = "db"',
            "task.toml: verifier.collect: runs commands in service 'db': a task here is one container, "
            "'main' (compose services other than main are refused). Run them in 'main', or remove them",
        ),
        (
            '\n[[steps]]\nname = "one"',
            "task.toml: steps: multi-step tasks are not supported: keep one instruction.md and one "
            "tests/test.sh per task",
        ),
    ],
)
def test_a_field_the_task_cannot_run_with_here_is_refused_with_why_and_what_to_do(
    tmp_path: Path, toml: str, expected: str
):
    [problem] = refused(write_task(tmp_path, "task", f"{ON_THE_SANDBOX_IMAGE}{toml}\n"))

    assert problem.startswith(expected)


def test_continuous_verification_written_disabled_loads(tmp_path: Path):
    toml = f"{ON_THE_SANDBOX_IMAGE}\n[verifier.continuous]\nenabled = false\n"

    assert loaded(write_task(tmp_path, "task", toml)).id == "task"


def test_collect_commands_go_to_the_verifier_in_order_with_their_time_limits(tmp_path: Path):
    toml = (
        f"{ON_THE_SANDBOX_IMAGE}\n[[verifier.collect]]\ncommand = 'cp /app/out /logs/out'\n"
        "[[verifier.collect]]\ncommand = 'sync'\ntimeout_sec = 5\nservice = 'main'\n"
    )

    [verifier] = loaded(write_task(tmp_path, "task", toml)).verifiers

    assert isinstance(verifier.function, HarborTests)
    assert verifier.function.collect == (Collect("cp /app/out /logs/out", 60.0), Collect("sync", 5.0))


def test_fields_run_without_are_said_once_for_the_dataset_one_line_per_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    for n in range(3):
        skills = "skills_dir = '/skills'" if n == 0 else ""
        write_task(
            tmp_path,
            f"task-{n}",
            f"{ON_THE_SANDBOX_IMAGE}healthcheck = {{ command = 'true' }}\n{skills}\n"
            "[agent]\nuser = 'agent'\n[verifier]\nuser = 'root'\n"
            "[[verifier.collect]]\ncommand = 'true'\nuser = 'app'\n"
            '[[artifacts]]\nsource = "/app/out.log"\n',
        )

    with caplog.at_level(logging.WARNING, logger="agent_env.harbor"):
        read, problems = read_harbor(tmp_path, build=False)

    assert problems == [] and read is not None
    assert [record.getMessage() for record in caplog.records] == [
        "not applied, commands run as root: agent.user (3 tasks), verifier.collect.user (3 tasks), "
        "verifier.user (3 tasks)",
        "not run: the first turn opens once the container's shell answers, and no service an image starts "
        "outlives a command here: environment.healthcheck (3 tasks)",
        "not installed: the agent here is a model with the bash tool alone: environment.skills_dir (1 task)",
        "not collected: Harbor gathers them after a trial for people to read; the score is test.sh's reward "
        "alone, which does not depend on them: artifacts (3 tasks)",
    ]


@pytest.mark.parametrize(
    "artifacts",
    [
        'artifacts = ["/app/out.log"]',
        '[[artifacts]]\nsource = "/logs/app"\ndestination = "app"\nexclude = ["*.tmp"]',
    ],
)
def test_artifacts_as_paths_or_tables_load(tmp_path: Path, artifacts: str):
    toml = f"{artifacts}\n{ON_THE_SANDBOX_IMAGE}"

    assert loaded(write_task(tmp_path, "task", toml)).id == "task"
