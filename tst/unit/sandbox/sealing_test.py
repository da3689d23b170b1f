"""What an agent may not change in its sandbox, read from the engine's diff of it; the verifiers'
environment."""

from __future__ import annotations

import pytest

from agent_env._error_types import ErrorCode
from agent_env.sandbox._sealing import (
    ADDED,
    CHANGED,
    DELETED,
    SHOWN_PATHS,
    Change,
    ProtectedPaths,
    changes_of,
    scratch_folder,
    unscorable,
    verifier_environment,
)

IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def forbidden(diff: list[tuple[str, int]], **settings: object) -> list[str]:
    protected = ProtectedPaths.of(IMAGE_PATH, **settings)  # type: ignore[arg-type]
    return [change.path for change in protected.forbidden(Change(path, kind) for path, kind in diff)]


def test_a_replaced_bash_and_its_renamed_original_are_forbidden_and_the_folder_listed_for_them_is_not_named():
    diff = [("/bin", CHANGED), ("/bin/bash", CHANGED), ("/bin/realbash", ADDED)]

    assert forbidden(diff, workdir="/app") == ["/bin/bash", "/bin/realbash"]


@pytest.mark.parametrize(
    "path",
    [
        "/etc/ld.so.preload",
        "/etc/bash.bashrc",
        "/etc/profile.d/evil.sh",
        "/usr/local/bin/python3",
        "/usr/lib/python3/dist-packages/_pytest/runner.py",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/ld-linux-x86-64.so.2",
        "/sbin/init",
        "/conftest.py",
        "/pytest.ini",
        "/pyproject.toml",
    ],
)
def test_a_change_to_the_systems_programs_libraries_configuration_or_pytests_files_at_the_root_is_forbidden(
    path: str,
):
    assert forbidden([(path, ADDED)], workdir="/app") == [path]


@pytest.mark.parametrize(
    "path",
    [
        "/app/solution.py",
        "/app/.venv/bin/python",
        "/tmp/scratch",
        "/answer.txt",
        "/data/out.csv",
        "/usr/lib/python3.11/__pycache__/os.cpython-311.pyc",
        "/usr/local/lib/python3.11/site-packages/__pycache__",
        "/root/.cache/pip/http/abc",
        "/root/.bash_history",
        "/root/notes.txt",
    ],
)
def test_the_agents_working_folder_scratch_space_compiled_python_caches_and_histories_are_its_own(path: str):
    assert forbidden([(path, ADDED)], workdir="/app", home="/root") == []


def test_a_folder_whose_own_mode_or_owner_changed_is_forbidden_when_nothing_in_it_is_listed():
    assert forbidden([("/usr/bin", CHANGED)], workdir="/app") == ["/usr/bin"]


def test_a_deleted_system_file_is_forbidden():
    assert forbidden([("/usr/bin/diff", DELETED)], workdir="/app") == ["/usr/bin/diff"]


def test_what_a_task_declares_it_may_change_is_allowed_and_its_neighbours_are_not():
    diff = [
        ("/etc/nginx/nginx.conf", CHANGED),
        ("/etc/nginx/sites-enabled/app", ADDED),
        ("/etc/nginxx", ADDED),
        ("/etc/ld.so.preload", ADDED),
    ]

    assert forbidden(diff, workdir="/app", may_change=["/etc/nginx/"]) == [
        "/etc/nginxx",
        "/etc/ld.so.preload",
    ]


def test_a_working_folder_in_a_system_folder_is_the_agents_and_one_at_the_root_protects_nothing():
    assert forbidden([("/usr/src/app/main.c", ADDED)], workdir="/usr/src/app") == []
    assert forbidden([("/usr/src/other.c", ADDED)], workdir="/usr/src/app") == ["/usr/src/other.c"]
    assert forbidden([("/conftest.py", ADDED), ("/etc/hosts.allow", ADDED)], workdir="/") == [
        "/conftest.py",
        "/etc/hosts.allow",
    ]


def test_the_prefix_of_every_bin_folder_on_the_images_path_is_protected_unless_in_the_working_folder():
    protected = ProtectedPaths.of("/opt/conda/bin:/app/node_modules/.bin:/usr/bin:/bin", workdir="/app")

    assert protected.protects("/opt/conda/lib/python3.11/site-packages/pytest/__init__.py")
    assert protected.protects("/opt/conda/bin/python")
    assert not protected.protects("/opt/other/tool")
    assert not protected.protects("/app/node_modules/.bin/jest")


def test_the_hidden_entries_of_the_verifiers_home_are_protected_even_inside_the_working_folder():
    at_root = ProtectedPaths.of(IMAGE_PATH, workdir="/app", home="/root")
    home_is_work = ProtectedPaths.of(IMAGE_PATH, workdir="/app", home="/app")

    assert at_root.protects("/root/.local/bin/env")
    assert at_root.protects("/root/.config/pip/pip.conf")
    assert at_root.protects("/root/.bashrc")
    assert home_is_work.protects("/app/.local/lib/python3.11/site-packages/evil.pth")
    assert not home_is_work.protects("/app/main.py")


def test_an_unscorable_episode_names_each_change_counts_those_past_the_shown_ones_and_says_how_to_declare():
    changes = [Change(f"/usr/bin/tool{n}", ADDED) for n in range(SHOWN_PATHS + 5)]

    error = unscorable(changes)

    assert error.code is ErrorCode.SYSTEM_CHANGED
    assert "/usr/bin/tool0 (added)" in error.message
    assert f"/usr/bin/tool{SHOWN_PATHS - 1} (added)" in error.message
    assert f"/usr/bin/tool{SHOWN_PATHS} (added)" not in error.message
    assert "and 5 more" in error.message
    assert "no reward, never 0" in error.message
    assert "may_change" in error.message and "[agent-env]" in error.message


def test_the_engines_diff_reads_as_changes():
    diff = [{"Path": "/bin/bash", "Kind": 0}, {"Path": "/bin/realbash", "Kind": 1}]

    assert changes_of(diff) == [Change("/bin/bash", CHANGED), Change("/bin/realbash", ADDED)]
    assert changes_of(None) == []


def test_the_verifiers_environment_turns_off_pythons_user_site_and_keeps_bytecode_and_caches_apart():
    scratch = scratch_folder()

    theirs = verifier_environment(scratch, own_home=False)
    own = verifier_environment(scratch, own_home=True)

    assert scratch.startswith("/tmp/agent-env-verifier-") and scratch != scratch_folder()
    assert theirs == {
        "PYTHONNOUSERSITE": "1",
        "PYTHONPYCACHEPREFIX": f"{scratch}/pycache",
        "XDG_CACHE_HOME": f"{scratch}/cache",
    }
    assert own == {**theirs, "HOME": f"{scratch}/home"}


def test_a_folder_added_for_what_is_in_it_is_not_named_but_one_added_empty_is():
    diff = [
        ("/usr/local", ADDED),
        ("/usr/local/lib", ADDED),
        ("/usr/local/lib/greeter", ADDED),
        ("/usr/local/lib/greeter/greeting.txt", ADDED),
        ("/usr/local/lib/python3", ADDED),
        ("/usr/local/lib/python3/__pycache__", ADDED),
        ("/usr/local/lib/python3/__pycache__/os.cpython-311.pyc", ADDED),
        ("/usr/local/share", ADDED),
    ]

    assert forbidden(diff, workdir="/app", may_change=["/usr/local/lib/greeter"]) == ["/usr/local/share"]
