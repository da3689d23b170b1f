"""task.toml read as Harbor reads it: the deprecated `memory = "4G"` / `storage = "10G"` in MB, and a
value Harbor would refuse refused here too, saying what to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env.harbor._loader import read_harbor
from tst.support.harbor_tasks import ON_THE_SANDBOX_IMAGE, write_task


@pytest.mark.parametrize(
    ("written", "memory_mb", "storage_mb"),
    [
        ('memory = "4G"\nstorage = "10G"', 4096, 10240),
        ('memory = "512M"\nstorage = "1.5G"', 512, 1536),
        ('memory = "2097152K"\nstorage = "20g"', 2048, 20480),
        ('memory = "4G"\nmemory_mb = 4096', 4096, 10240),  # the same size, both ways: no conflict
    ],
)
def test_the_deprecated_memory_and_storage_strings_are_read_as_harbor_reads_them(
    tmp_path: Path, written: str, memory_mb: int, storage_mb: int
):
    read, problems = read_harbor(
        write_task(tmp_path, "task", f"{ON_THE_SANDBOX_IMAGE}{written}\n"), build=False
    )

    assert problems == [] and read is not None
    settings = read.splits["train"][0].sandbox_settings
    assert (settings.memory_mb, settings.storage_mb) == (memory_mb, storage_mb)


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (
            'memory = "4G"\nmemory_mb = 2048',
            "task.toml: field 'environment': 'memory' (4096 MB) and 'memory_mb' (2048) disagree: keep only "
            "memory_mb",
        ),
        (
            'storage = "lots"',
            "task.toml: field 'environment': 'storage' = 'lots' is not a size such as \"4G\" or \"512M\": "
            "write storage_mb (MB)",
        ),
        (
            'network_mode = "offline"',
            "task.toml: field 'environment.network_mode': Input should be 'public', 'no-network' or "
            "'allowlist'",
        ),
    ],
)
def test_a_value_harbor_refuses_is_a_problem_saying_what_to_write(
    tmp_path: Path, written: str, expected: str
):
    read, problems = read_harbor(
        write_task(tmp_path, "task", f"{ON_THE_SANDBOX_IMAGE}{written}\n"), build=False
    )

    assert read is None
    [problem] = [str(p) for p in problems]
    assert problem.startswith(expected)
