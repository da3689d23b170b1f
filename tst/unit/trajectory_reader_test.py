"""`read_trajectories`: a file's or a folder's trajectories read back, every line that is not one skipped
and said so, and a folder's FIFOs and links never opened."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent_env._trajectory_reader import read_trajectories
from tst.support.trajectories import a_trajectory, fifo
from tst.support.waiting import within


def test_lines_that_are_not_trajectories_are_skipped_with_their_place_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = a_trajectory().model_dump_json()
    (tmp_path / "mixed.jsonl").write_text(f'{good}\n{{"not": "a trajectory"}}\n\n{good}\n')

    with caplog.at_level(logging.WARNING, logger="agent_env.recording"):
        read = list(read_trajectories(tmp_path))

    assert len(read) == 2
    assert "mixed.jsonl:2 is not a trajectory" in caplog.text


def test_a_folder_s_fifo_and_links_are_skipped_unopened_and_said_so_while_its_files_are_read(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "theirs.jsonl"
    elsewhere.write_text(a_trajectory(9).model_dump_json() + "\n")
    (tmp_path / "ours.jsonl").write_text(a_trajectory(1).model_dump_json() + "\n")
    (tmp_path / "out.jsonl").symlink_to(elsewhere)
    (tmp_path / "again.jsonl").symlink_to(tmp_path / "ours.jsonl")
    skipped: list[tuple[str, int, str]] = []

    with fifo(tmp_path / "pipe.jsonl"):
        read = within(
            5.0,
            lambda: list(
                read_trajectories(tmp_path, skipped=lambda f, n, why: skipped.append((f.name, n, why)))
            ),
        )

    assert [t.task.index for t in read] == [1]
    assert sorted(skipped) == [
        ("again.jsonl", 0, f"a symbolic link (to {tmp_path / 'ours.jsonl'}): links are not followed"),
        ("out.jsonl", 0, f"a symbolic link (to {elsewhere}): links are not followed"),
        ("pipe.jsonl", 0, "not a regular file (a FIFO): not read"),
    ]
