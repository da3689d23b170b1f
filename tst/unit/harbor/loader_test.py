"""Harbor task folders read at load, before any image is built: what each task becomes, and every
malformed folder refused with its task folder and the fix."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from agent_env import ArgumentError, BundleError, Episode, load_bundle
from agent_env._verifiers import ScriptCheck
from agent_env.harbor import harbor_folder
from agent_env.harbor._loader import read_harbor
from agent_env.harbor._verifier import HarborTests
from tst.support.bundles import files_read
from tst.support.harbor_tasks import DATASET, EDGE, MALFORMED, ON_THE_SANDBOX_IMAGE, write_task


def unbuilt(path: Path):  # type: ignore[no-untyped-def]
    read, problems = read_harbor(path, build=False)
    assert problems == [] and read is not None
    return read


def problems_of(path: Path | str) -> list[str]:
    with pytest.raises(BundleError) as raised:
        load_bundle(path)
    return [str(problem) for problem in raised.value.problems]


def test_a_folder_of_task_folders_and_a_single_task_folder_are_found_by_their_files_and_a_bundle_is_not():
    assert harbor_folder(DATASET) == DATASET
    assert harbor_folder(DATASET / "greeting") == DATASET / "greeting"
    assert harbor_folder(Path(__file__).parents[3] / "examples" / "wharf") is None
    assert harbor_folder(f"harbor:{DATASET}") == DATASET


def test_each_task_is_its_instruction_as_the_one_turn_with_bash_and_its_test_script_as_the_verifier():
    read = unbuilt(DATASET)
    tasks = {task.id: task for task in read.splits["train"]}

    greeting = tasks["greeting"]
    assert list(read.splits) == ["train"] and sorted(tasks) == ["greeting", "lines", "marker"]
    assert greeting.turns == ("Write the word hello into the file /app/greeting.txt.\n",)
    assert greeting.toolset.bash and greeting.toolset.envs == ()
    assert [type(v.spec) for v in greeting.verifiers] == [ScriptCheck]
    assert greeting.verifiers[0].spec.timeout_s == 30.0
    assert greeting.time_limit_s == 60.0
    settings = greeting.sandbox_settings
    assert (settings.provider, settings.cpus, settings.memory_mb, settings.storage_mb) == (
        "docker",
        1,
        256,
        512,
    )
    assert settings.network is False and settings.command_timeout_s == 60.0


def test_the_test_scripts_files_and_env_stay_on_the_server_and_the_task_spec_shows_neither():
    tasks = {task.id: task for task in unbuilt(DATASET).splits["train"]}
    lines = tasks["lines"]
    run = lines.verifiers[0].function

    assert isinstance(run, HarborTests)
    assert set(run.files) == {"test.sh"} and run.env == {"EXPECTED": "4"}
    spec = lines.spec.model_dump_json()
    assert "EXPECTED" not in spec and "reward.json" not in spec and "solve" not in spec


def test_a_tasks_solution_is_one_bash_call_that_writes_solve_sh_to_solution_and_runs_it_in_the_workdir():
    read = unbuilt(DATASET)
    solution = read.solutions["train"]["lines"]

    [turn] = solution.turns
    [call] = turn.calls
    command = call.arguments["command"]
    assert call.tool == "bash" and solution.expected_score == 1.0
    assert "cat > /solution/solve.sh <<'AGENT_ENV_SOLUTION_EOF'\n#!/bin/bash\nwc -l" in command
    assert command.endswith("bash /solution/solve.sh")


def test_a_sidecar_maps_task_folders_to_splits_and_the_rest_stay_in_train(tmp_path: Path):
    shutil.copytree(DATASET, tmp_path / "tasks")
    (tmp_path / "tasks" / "agent-env-splits.toml").write_text('eval = ["lines"]\n')

    read = unbuilt(tmp_path / "tasks")

    assert {split: [t.id for t in tasks] for split, tasks in read.splits.items()} == {
        "train": ["greeting", "marker"],
        "eval": ["lines"],
    }
    assert [t.index for t in read.splits["train"]] == [0, 1]
    assert list(read.solutions["eval"]) == ["lines"]


def test_a_sidecar_naming_a_folder_that_is_no_task_is_refused_with_the_name(tmp_path: Path):
    shutil.copytree(DATASET, tmp_path / "tasks")
    (tmp_path / "tasks" / "agent-env-splits.toml").write_text('eval = ["line"]\n')

    read, problems = read_harbor(tmp_path / "tasks", build=False)

    assert read is None
    assert [str(p) for p in problems] == [
        "agent-env-splits.toml: split 'eval' names 'line', which is no task folder here"
    ]


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("no-instruction", "instruction.md: missing: write the task's prompt for the agent in it"),
        ("bad-toml", "task.toml: malformed TOML: Expected ']' at the end of a table declaration"),
        ("steps", "steps: multi-step tasks (steps/) are not supported"),
        pytest.param(
            "compose",
            "environment/docker-compose.yaml: names service(s) 'db': a task here is one container",
            marks=pytest.mark.needs("docker_installed"),  # PyYAML, which reads it, is the extra's
        ),
        ("gpu", "task.toml: environment.gpus: GPUs are not supported"),
        ("no-tests", "tests/test.sh: missing: write the script that checks the work"),
    ],
)
def test_a_malformed_task_folder_is_refused_at_load_saying_what_is_wrong_and_the_fix(
    folder: str, expected: str
):
    [problem] = problems_of(MALFORMED / folder)

    assert problem.startswith(expected)


def test_in_a_dataset_each_problem_names_its_task_folder_and_every_one_is_reported_at_once(tmp_path: Path):
    for name in ("no-instruction", "gpu"):
        shutil.copytree(MALFORMED / name, tmp_path / name)
    shutil.copytree(DATASET / "marker", tmp_path / "marker")

    problems = problems_of(tmp_path)

    assert [p.split(":")[0] for p in problems] == ["gpu/task.toml", "no-instruction/instruction.md"]


def test_a_field_no_version_of_this_loader_knows_is_a_warning_naming_it_and_the_task_still_loads(caplog):
    with caplog.at_level(logging.WARNING, logger="agent_env.harbor"):
        read = unbuilt(MALFORMED / "unknown-field")

    assert [t.id for t in read.splits["train"]] == ["unknown-field"]
    warned = [record.getMessage() for record in caplog.records]
    assert warned == [
        "task.toml fields this loader does not know (a newer Harbor's?), ignored: agent.turbo (1 task), "
        "environment.shiny_new_option (1 task)"
    ]


def test_a_datasets_unknown_fields_are_one_line_counting_the_tasks_that_write_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    for n in range(5):
        extra = "turbo = true\n" if n < 4 else ""
        write_task(tmp_path, f"task-{n}", f"{ON_THE_SANDBOX_IMAGE}{extra}[agent]\nfast = 1\n")

    with caplog.at_level(logging.WARNING, logger="agent_env.harbor"):
        read = unbuilt(tmp_path)

    assert len(read.splits["train"]) == 5
    assert [record.getMessage() for record in caplog.records] == [
        "task.toml fields this loader does not know (a newer Harbor's?), ignored: agent.fast (5 tasks), "
        "environment.turbo (4 tasks)"
    ]


def test_a_variable_the_task_toml_takes_from_the_host_is_resolved_or_its_absence_is_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    task = shutil.copytree(DATASET / "marker", tmp_path / "marker")
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text() + 'env = { TOKEN = "${HARBOR_TEST_TOKEN}", MODE = "${HARBOR_TEST_MODE:-fast}" }\n'
    )
    monkeypatch.delenv("HARBOR_TEST_TOKEN", raising=False)

    _, problems = read_harbor(task, build=False)
    monkeypatch.setenv("HARBOR_TEST_TOKEN", "t0k")
    read = unbuilt(task)

    assert [str(p) for p in problems] == [
        "task.toml: uses ${HARBOR_TEST_TOKEN}, which is not set here: set it, or give a default "
        "(${HARBOR_TEST_TOKEN:-value})"
    ]
    assert dict(read.splits["train"][0].sandbox_settings.environment) == {"TOKEN": "t0k", "MODE": "fast"}


def test_the_edge_tasks_load_with_their_own_time_limits():
    tasks = {task.id: task for task in unbuilt(EDGE).splits["train"]}

    assert tasks["agent-timeout"].time_limit_s == 2.0
    assert tasks["slow-tests"].verifiers[0].spec.timeout_s == 1.0 and tasks["slow-tests"].time_limit_s is None


def test_a_harbor_task_asked_to_play_in_the_local_sandbox_is_refused_before_anything_runs():
    task = unbuilt(DATASET).splits["train"][0]

    with pytest.raises(ArgumentError) as refused:
        Episode(task, provider="local")

    assert str(refused.value) == (
        "task 'greeting' runs in its own Docker image: play it with the docker sandbox, not 'local' "
        "(leave --sandbox out)"
    )


@pytest.mark.parametrize(
    "linked",
    [
        "greeting/instruction.md",
        "greeting/task.toml",
        "greeting/environment/Dockerfile",
        "greeting/environment",
        "greeting/tests/test.sh",
        "greeting/tests",
        "greeting/solution/solve.sh",
        "agent-env-splits.toml",
    ],
)
def test_a_file_a_task_is_read_from_that_links_out_of_the_folder_is_refused_unread_naming_it_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linked: str
):
    dataset = tmp_path / "dataset"
    shutil.copytree(DATASET / "greeting", dataset / "greeting")
    (dataset / "agent-env-splits.toml").write_text('eval = ["greeting"]\n')
    link = dataset / linked
    outside = tmp_path / "elsewhere" / link.name
    outside.parent.mkdir()
    link.rename(outside)  # the very bytes the task had: read, they would load
    link.symlink_to(outside)
    read = files_read(monkeypatch)

    loaded, problems = read_harbor(dataset, build=False)

    assert loaded is None
    assert [str(p) for p in problems] == [
        f"{linked}: leads out of the task folder (a symlink or '..'), to '{outside}': put the file itself in "
        "the task folder (a link to a file inside it is fine); nothing out of it is read"
    ]
    assert not [path for path in read if path.is_relative_to(outside.parent)]


def test_a_link_to_a_file_inside_the_folder_is_read_as_that_file(tmp_path: Path):
    dataset = tmp_path / "dataset"
    shutil.copytree(DATASET / "greeting", dataset / "greeting")
    (dataset / "prompts").mkdir()
    (dataset / "greeting" / "instruction.md").rename(dataset / "prompts" / "greeting.md")
    (dataset / "greeting" / "instruction.md").symlink_to("../prompts/greeting.md")

    [task] = unbuilt(dataset).splits["train"]

    assert task.turns == ("Write the word hello into the file /app/greeting.txt.\n",)


def test_an_instruction_over_1_mib_is_refused_unread_naming_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    task = shutil.copytree(DATASET / "greeting", tmp_path / "greeting")
    with (task / "instruction.md").open("wb") as instruction:
        instruction.truncate(100 * 2**20)  # sparse: nothing is written, and the check must not read it
    read = files_read(monkeypatch)

    loaded, problems = read_harbor(task, build=False)

    assert loaded is None
    assert [str(p) for p in problems] == [
        "instruction.md: 'instruction.md' is 100 MiB, over the 1 MiB a prompt may be: shorten it (a model's "
        "context holds far less), and give the task the data it needs as files instead (a bundle's sandbox "
        "files, a Harbor task's environment/)"
    ]
    assert (task / "instruction.md").resolve() not in read


@pytest.mark.needs("docker_installed", "docker_engine")
@pytest.mark.parametrize("build", [True, False])
def test_memory_beyond_what_the_engine_has_is_refused_at_load_with_what_it_has_built_or_not(
    tmp_path: Path, build: bool
):
    from agent_env.sandbox._docker_engine import docker_client

    task = shutil.copytree(DATASET / "marker", tmp_path / "marker")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 256", "memory_mb = 1073741824"))
    memory_mb = docker_client().info()["MemTotal"] // 2**20

    read, problems = read_harbor(task, build=build)

    assert read is None
    assert [str(p) for p in problems] == [
        f"task.toml: environment.memory_mb: asks for 1073741824 MB, and the Docker engine has {memory_mb} MB "
        f"in all: write memory_mb = {memory_mb} or less, or load the tasks where the engine has more",
    ]


@pytest.mark.needs("docker_installed", "docker_engine")
@pytest.mark.parametrize("build", [True, False])
def test_cpus_beyond_what_the_engine_has_are_clamped_to_its_count_in_one_line_for_the_dataset(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, build: bool
):
    from agent_env.sandbox._docker_engine import docker_client

    cpus = docker_client().info()["NCPU"]
    for name, asked in (("small", 1), ("big", cpus + 2), ("huge", 4096)):
        write_task(tmp_path, name, f"{ON_THE_SANDBOX_IMAGE}cpus = {asked}\nmemory_mb = 256\n")

    with caplog.at_level(logging.WARNING, logger="agent_env.harbor"):
        read, problems = read_harbor(tmp_path, build=build)

    assert problems == [] and read is not None
    given = {task.id: task.sandbox_settings.cpus for task in read.splits["train"]}
    assert given == {"big": cpus, "huge": cpus, "small": 1}
    assert [record.getMessage() for record in caplog.records] == [
        f"more CPUs than the Docker engine has ({cpus}) are asked for by 2 tasks: big ({cpus + 2}), huge "
        f"(4096); each gets the engine's {cpus}, all a larger quota could give it (write cpus = {cpus} or "
        "less to say so, or load them where the engine has more)"
    ]


def mixed(root: Path, *broken: str) -> Path:
    """The dataset's three good tasks beside the malformed task folders named."""
    shutil.copytree(DATASET, root)
    for name in broken:
        shutil.copytree(MALFORMED / name, root / name)
    return root


def test_skipping_broken_tasks_loads_the_others_and_lists_each_folder_left_out_with_its_problems(
    tmp_path: Path,
):
    dataset = mixed(tmp_path / "mixed", "no-tests", "bad-toml", "gpu")
    (dataset / "agent-env-splits.toml").write_text('eval = ["lines", "gpu"]\n')

    read, problems = read_harbor(dataset, build=False, skip_broken_tasks=True)

    assert problems == [] and read is not None
    assert {split: [(t.index, t.id) for t in tasks] for split, tasks in read.splits.items()} == {
        "train": [(0, "greeting"), (1, "marker")],
        "eval": [(0, "lines")],
    }
    assert {split: list(plays) for split, plays in read.solutions.items()} == {
        "train": ["greeting", "marker"],
        "eval": ["lines"],
    }
    assert [(s.task, [str(p).split(":")[0] for p in s.problems]) for s in read.skipped] == [
        ("bad-toml", ["bad-toml/task.toml"]),
        ("gpu", ["gpu/task.toml"]),
        ("no-tests", ["no-tests/tests/test.sh"]),
    ]


def test_without_being_asked_to_skip_one_broken_task_still_stops_the_dataset(tmp_path: Path):
    dataset = mixed(tmp_path / "mixed", "no-tests")

    read, problems = read_harbor(dataset, build=False)

    assert read is None and [p.where for p in problems] == ["no-tests/tests/test.sh"]


def test_a_problem_that_is_no_one_tasks_stops_a_load_that_skips_broken_tasks(tmp_path: Path):
    dataset = mixed(tmp_path / "mixed", "no-tests")
    (dataset / "agent-env-splits.toml").write_text("eval = [\n")

    read, problems = read_harbor(dataset, build=False, skip_broken_tasks=True)

    assert read is None
    assert [p.where for p in problems] == ["no-tests/tests/test.sh", "agent-env-splits.toml"]


def test_a_dataset_none_of_whose_tasks_loads_is_refused_even_when_skipping_with_every_problem(
    tmp_path: Path,
):
    dataset = tmp_path / "broken"
    for name in ("no-tests", "gpu"):
        shutil.copytree(MALFORMED / name, dataset / name)

    read, problems = read_harbor(dataset, build=False, skip_broken_tasks=True)

    assert read is None
    assert [str(p) for p in problems][-1] == (
        "none of its 2 tasks loads, so skipping those that do not leaves nothing: fix them (each problem "
        "is listed here)"
    )
    assert [p.where for p in problems][:2] == ["gpu/task.toml: environment.gpus", "no-tests/tests/test.sh"]


def test_a_single_broken_task_folder_is_refused_even_when_skipping():
    read, problems = read_harbor(MALFORMED / "no-tests", build=False, skip_broken_tasks=True)

    assert read is None and [p.where for p in problems] == ["tests/test.sh"]


@pytest.mark.needs("docker_installed")
def test_no_docker_engine_at_all_stops_a_load_that_skips_broken_tasks_saying_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    dataset = mixed(tmp_path / "mixed", "no-tests")

    with pytest.raises(BundleError) as refused:
        load_bundle(dataset, skip_broken_tasks=True)

    problems = refused.value.problems
    assert [p.where for p in problems] == ["no-tests/tests/test.sh", ""]
    assert problems[1].message.startswith("Harbor tasks run in Docker, and their images are built at load: ")
