"""`TrajectoryRecorder`: one JSON line per trajectory, written off the caller's thread, never blocking it."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from agent_env import _trajectory_recorder as trajectory_recorder
from agent_env._trajectory import Trajectory, VerifierRecord
from agent_env._trajectory_reader import read_trajectories
from agent_env._trajectory_recorder import REDACTED, Redaction, TrajectoryRecorder
from tst.support.trajectories import a_trajectory
from tst.support.waiting import until


def test_each_trajectory_is_one_line_read_back_in_order(tmp_path: Path) -> None:
    recorder = TrajectoryRecorder(tmp_path)
    for index in range(5):
        recorder.record(a_trajectory(index))
    recorder.close()

    assert [t.task.index for t in read_trajectories(tmp_path)] == [0, 1, 2, 3, 4]
    assert recorder.written == 5 and recorder.dropped == 0
    assert len(recorder.files) == 1


def test_files_roll_once_they_reach_their_size(tmp_path: Path) -> None:
    line_bytes = len(a_trajectory().model_dump_json()) + 1
    recorder = TrajectoryRecorder(tmp_path, max_mb=(line_bytes * 2.5) / (1024 * 1024))
    for index in range(6):
        recorder.record(a_trajectory(index))
    recorder.close()

    assert [len(path.read_text().splitlines()) for path in recorder.files] == [2, 2, 2]
    assert [t.task.index for t in read_trajectories(tmp_path)] == list(range(6))


def test_secret_keys_and_values_are_redacted_wherever_they_are(tmp_path: Path) -> None:
    redaction = Redaction.of(keys=["password"], values=["s3cr3t-token"])
    recorder = TrajectoryRecorder(tmp_path, redaction=redaction)
    recorder.record(a_trajectory(result="the token is s3cr3t-token"))
    recorder.close()

    (trajectory,) = read_trajectories(tmp_path)
    call = trajectory.turns[0].calls[0]
    assert call.arguments == {"crate": "C0", "password": REDACTED}
    assert call.result == f"the token is {REDACTED}"
    assert "hunter2" not in recorder.files[0].read_text()


def test_a_secret_a_verifier_s_output_shows_is_redacted_as_every_text_of_the_trajectory(
    tmp_path: Path,
) -> None:
    trajectory = a_trajectory()
    said = (
        "+ curl -H 'Authorization: Bearer s3cr3t-token' https://judge.test\ncurl: (6) Could not resolve host"
    )
    trajectory.verifiers = [VerifierRecord(type="test_script", weight=1.0, score=0.0, detail=said)]
    recorder = TrajectoryRecorder(tmp_path, redaction=Redaction.of(values=["s3cr3t-token"]))
    recorder.record(trajectory)
    recorder.close()

    (read,) = read_trajectories(tmp_path)
    assert read.verifiers[0].detail == said.replace("s3cr3t-token", REDACTED)
    assert "s3cr3t-token" not in recorder.files[0].read_text()


def test_a_secret_environment_variable_s_value_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WHARF_KEY", "k-7731")
    recorder = TrajectoryRecorder(tmp_path, redaction=Redaction.of(env=["WHARF_KEY", "UNSET_VARIABLE"]))
    recorder.record(a_trajectory(result="key k-7731 used"))
    recorder.close()

    assert next(read_trajectories(tmp_path)).turns[0].calls[0].result == f"key {REDACTED} used"


def test_a_full_disk_drops_that_trajectory_logged_and_the_next_is_written_to_a_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = TrajectoryRecorder(tmp_path)
    recorder.record(a_trajectory(0))
    assert recorder.flush()
    opened = recorder._open
    monkeypatch.setattr(recorder, "_open", lambda: open("/dev/full", "ab"))  # noqa: SIM115 - ENOSPC
    with caplog.at_level(logging.ERROR, logger="agent_env.recording"):
        recorder.record(a_trajectory(1))
        assert recorder.flush()
    monkeypatch.setattr(recorder, "_open", opened)
    recorder.record(a_trajectory(2))
    recorder.close()

    assert recorder.dropped == 1 and recorder.written == 2
    assert "No space left on device" in caplog.text
    assert [t.task.index for t in read_trajectories(tmp_path)] == [0, 2]
    assert len(recorder.files) == 2


def test_recording_never_blocks_a_full_queue_drops_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(trajectory_recorder, "_QUEUE_SIZE", 3)
    stuck = threading.Event()
    recorder = TrajectoryRecorder(tmp_path)
    monkeypatch.setattr(recorder, "_write", lambda lines: stuck.wait(10))  # a disk that hangs

    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="agent_env.recording"):
        for index in range(10):
            recorder.record(a_trajectory(index))
    elapsed = time.monotonic() - started
    stuck.set()
    recorder.close()

    assert elapsed < 1.0
    assert recorder.dropped >= 6
    assert "queue is full" in caplog.text


def test_a_size_that_is_not_positive_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_mb must be > 0"):
        TrajectoryRecorder(tmp_path, max_mb=0)


def a_trajectory_with_a_lone_surrogate(index: int = 0) -> Trajectory:
    """A trajectory UTF-8 cannot hold: an argument with a lone surrogate (`"\\ud800"` on the wire)."""
    trajectory = a_trajectory(index)
    trajectory.turns[0].calls[0].arguments["crate"] = "C17\ud800"
    return trajectory


@pytest.mark.parametrize(
    "redaction", [Redaction(), Redaction.of(values=["tok-9f3e1c"])], ids=["plain", "redacted"]
)
def test_a_trajectory_that_cannot_be_written_is_dropped_counted_and_the_next_ones_are_still_recorded(
    tmp_path: Path, redaction: Redaction
) -> None:
    recorder = TrajectoryRecorder(tmp_path, redaction=redaction)
    recorder.record(a_trajectory(0))
    recorder.record(a_trajectory_with_a_lone_surrogate(1))
    recorder.record(a_trajectory(2))
    assert recorder.flush()
    recorder.record(a_trajectory(3))
    recorder.close()

    assert [t.task.index for t in read_trajectories(tmp_path)] == [0, 2, 3]
    assert recorder.written == 3 and recorder.dropped == 1
    assert recorder.dropped_by_reason == {"unwritable": 1}


def test_a_writer_that_fails_in_any_way_drops_that_batch_counted_and_writes_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = TrajectoryRecorder(tmp_path)
    opened = recorder._open
    closed = open(tmp_path / "closed.txt", "ab")  # noqa: SIM115 - a file closed under the writer
    closed.close()
    monkeypatch.setattr(recorder, "_open", lambda: closed)  # writing raises ValueError, not OSError
    recorder.record(a_trajectory(0))
    recorder.record(a_trajectory(1))
    assert recorder.flush()
    monkeypatch.setattr(recorder, "_open", opened)
    recorder.record(a_trajectory(2))
    recorder.close()

    assert [t.task.index for t in read_trajectories(tmp_path)] == [2]
    assert recorder.dropped == 2 and recorder.dropped_by_reason == {"write_failed": 2}


def test_twenty_losses_count_twenty_logged_first_with_their_reason_then_as_a_running_total(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = TrajectoryRecorder(tmp_path, redaction=Redaction.of(values=["tok-9f3e1c"]))
    with caplog.at_level(logging.ERROR, logger="agent_env.recording"):
        for index in range(20):
            recorder.record(a_trajectory_with_a_lone_surrogate(index))
        recorder.close()

    messages = [record.getMessage() for record in caplog.records]
    assert recorder.dropped == 20
    assert len(messages) == 2, messages  # the first, then the total at close: never a line per loss
    assert "not valid Unicode" in messages[0] and "(1 so far)" in messages[0]
    assert "20 trajectories not recorded" in messages[1]


def test_losses_that_go_on_are_logged_as_their_running_total_while_the_writer_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(trajectory_recorder, "_LOG_EVERY_S", 0.2)
    recorder = TrajectoryRecorder(tmp_path)
    with caplog.at_level(logging.ERROR, logger="agent_env.recording"):
        for index in range(3):
            recorder.record(a_trajectory_with_a_lone_surrogate(index))
        logged_while_waiting = until(lambda: len(caplog.records) >= 2, 10)
        recorder.close()

    messages = [record.getMessage() for record in caplog.records]
    assert logged_while_waiting and len(messages) == 2, messages  # the first; the total, not again at close
    assert "3 trajectories not recorded" in messages[1] and "unwritable: 3" in messages[1]
