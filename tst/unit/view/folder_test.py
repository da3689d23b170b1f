"""A trajectory folder is read afresh at each look; one that cannot be shown says what to pass; only its
own regular files are read, none waited on, and what is left unread is named with why."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agent_env.testing import FakeTask
from agent_env.view import TrajectoryFolder, ViewError
from tst.support.tools import add_crate
from tst.support.trajectories import fifo, played, write_folder
from tst.support.waiting import within

BOUND_S = 5.0


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


def test_a_fifo_a_socket_and_a_folder_named_like_trajectory_files_are_skipped_unread_saying_what_they_are(
    tmp_path: Path,
) -> None:
    write_folder(tmp_path, [played(FakeTask("kept", tools=[add_crate]), ("end", "done"))], name="kept.jsonl")
    (tmp_path / "folder.jsonl").mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "socket.jsonl"))

    with listener, fifo(tmp_path / "pipe.jsonl"):
        listing = within(BOUND_S, TrajectoryFolder(tmp_path).read)

    assert [(e.trajectory.task.id, e.file) for e in listing.episodes] == [("kept", "kept.jsonl")]
    assert [(s.file, s.line, s.why) for s in listing.skipped] == [
        ("folder.jsonl", 0, "not a regular file (a folder): not read"),
        ("pipe.jsonl", 0, "not a regular file (a FIFO): not read"),
        ("socket.jsonl", 0, "not a regular file (a socket): not read"),
    ]


def test_a_fifo_given_as_the_one_file_is_refused_and_not_waited_on(tmp_path: Path) -> None:
    with fifo(tmp_path / "pipe.jsonl") as pipe, pytest.raises(ViewError) as refused:
        within(BOUND_S, TrajectoryFolder(pipe).check)

    assert str(refused.value).startswith(f"{pipe} is not a regular file (a FIFO): pass a folder of")


def test_a_link_is_followed_neither_out_of_the_folder_nor_within_it(tmp_path: Path) -> None:
    runs, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    write_folder(elsewhere, [played(FakeTask("outside", tools=[add_crate]), ("end", "done"))], name="o.jsonl")
    write_folder(runs, [played(FakeTask("inside", tools=[add_crate]), ("end", "done"))], name="a.jsonl")
    (runs / "again.jsonl").symlink_to("a.jsonl")
    (runs / "loop.jsonl").symlink_to(".")
    (runs / "out.jsonl").symlink_to(elsewhere / "o.jsonl")

    listing = TrajectoryFolder(runs).read()

    assert [(e.trajectory.task.id, e.file) for e in listing.episodes] == [("inside", "a.jsonl")]
    assert [(s.file, s.line, s.why) for s in listing.skipped] == [
        ("again.jsonl", 0, "a symbolic link (to a.jsonl): links are not followed"),
        ("loop.jsonl", 0, "a symbolic link (to .): links are not followed"),
        ("out.jsonl", 0, f"a symbolic link (to {elsewhere / 'o.jsonl'}): links are not followed"),
    ]
