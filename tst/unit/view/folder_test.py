"""A trajectory folder is read afresh at each look; one that cannot be shown says what to pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env.testing import FakeTask
from agent_env.view import TrajectoryFolder, ViewError
from tst.support.tools import add_crate
from tst.support.trajectories import played, write_folder


def test_a_folder_that_does_not_exist_says_so_and_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(
        ViewError, match=r"nowhere does not exist: pass a folder of trajectory files \(\*\.jsonl"
    ):
        TrajectoryFolder(tmp_path / "nowhere").check()


def test_a_folder_with_only_lines_that_are_not_trajectories_holds_none(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text("hello\n")

    with pytest.raises(ViewError, match=r"holds no trajectories \(1 \.jsonl files, 1 lines that are not\)"):
        TrajectoryFolder(tmp_path).check()


def test_one_file_may_be_shown_instead_of_a_folder(tmp_path: Path) -> None:
    write_folder(tmp_path, [played(FakeTask("one", tools=[add_crate]), ("end", "done"))], name="one.jsonl")

    listing = TrajectoryFolder(tmp_path / "one.jsonl").check()

    assert [(e.trajectory.task.id, e.file) for e in listing.episodes] == [("one", "one.jsonl")]


def test_a_file_appended_to_is_read_again_and_an_unchanged_one_is_not(tmp_path: Path) -> None:
    first = played(FakeTask("first", tools=[add_crate]), ("end", "done"))
    write_folder(tmp_path, [first], name="a.jsonl")
    write_folder(tmp_path, [first], name="b.jsonl")
    folder = TrajectoryFolder(tmp_path)
    before = folder.read()

    write_folder(tmp_path, [played(FakeTask("second", tools=[add_crate]), ("end", "done"))], name="b.jsonl")
    after = folder.read()

    assert [e.trajectory.task.id for e in after.episodes] == ["first", "first", "second"]
    assert after.episodes[0] is before.episodes[0]


def test_a_line_that_is_not_utf8_is_skipped_and_the_rest_of_its_file_is_read(tmp_path: Path) -> None:
    write_folder(tmp_path, [played(FakeTask("after", tools=[add_crate]), ("end", "done"))], name="a.jsonl")
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\xff\xfe not text\n" + path.read_bytes())

    listing = TrajectoryFolder(tmp_path).read()

    assert [e.trajectory.task.id for e in listing.episodes] == ["after"]
    assert [(s.file, s.line) for s in listing.skipped] == [("a.jsonl", 1)]
