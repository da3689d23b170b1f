"""The trajectory recorder: writing trajectories to a folder, one JSON line each, without ever
holding up an episode.

`TrajectoryRecorder.record` redacts the trajectory into a line of UTF-8 JSON and puts it on a bounded
queue; a daemon thread of the recorder's own takes what gathered there every `_GATHER_S`, writes it
and flushes it. Files are named
`trajectories-<time>-<pid>-<n>.jsonl` and roll once they reach `max_mb`. A disk that is slow only
lengthens the queue. A trajectory that cannot be written (one that is not valid Unicode, a disk that
fails, a full queue) is dropped and counted by reason (`dropped`, `dropped_by_reason`), and the next
one is tried afresh: nothing a trajectory holds and nothing the disk does stops the writer, or a
server. Losses are logged without flooding: the first with its reason, then the running total at
most every `_LOG_EVERY_S` and at close, so every count logged is the true one. Reading them back is
`agent_env._trajectory_reader`'s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import threading
import time
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from agent_env._errors import ArgumentError
from agent_env._trajectory import Trajectory
from agent_env._unicode import NOT_UNICODE, invalid_text

log = logging.getLogger("agent_env.recording")

DEFAULT_MAX_MB = 100.0
REDACTED = "[redacted]"
_QUEUE_SIZE = 10_000
_BATCH = 1024
"""The most trajectories written in one write."""
_GATHER_S = 0.2
"""How long the writer lets trajectories gather before it writes them: waking the writer for each
one would take the interpreter's lock from the server's event loop hundreds of times a second."""
_CLOSE_WAIT_S = 10.0
_LOG_EVERY_S = 60.0
"""The most often a recorder that keeps losing trajectories logs their running total."""
_STOP = object()

DropReason = Literal["unwritable", "queue_full", "write_failed"]
"""Why a trajectory was not recorded: it cannot be made a line of UTF-8 JSON (a string that is not
valid Unicode), the queue was full (the disk is slower than the episodes), or writing it failed."""
DROP_REASONS: tuple[DropReason, ...] = typing.get_args(DropReason)


@dataclass(frozen=True)
class Redaction:
    """What never reaches a trajectory file: the values of arguments and JSON keys by these names,
    and these literal strings (a token, a secret environment variable's value) wherever they appear."""

    keys: frozenset[str] = frozenset()
    values: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.keys and not self.values

    @classmethod
    def of(
        cls, *, keys: Iterable[str] = (), env: Iterable[str] = (), values: Iterable[str] = ()
    ) -> Redaction:
        """`env` names environment variables whose values are secret (unset ones are skipped)."""
        secrets = [*values, *(os.environ.get(name, "") for name in env)]
        return cls(frozenset(keys), tuple(sorted({s for s in secrets if s}, key=len, reverse=True)))

    def apply(self, data: Any) -> Any:
        """`data` (JSON-ready) with every secret replaced by `REDACTED`."""
        return data if self.empty else self._walk(data)

    def _walk(self, node: Any) -> Any:
        if isinstance(node, str):
            for value in self.values:
                node = node.replace(value, REDACTED)
            return node
        if isinstance(node, list):
            return [self._walk(item) for item in node]
        if isinstance(node, Mapping):
            return {key: REDACTED if key in self.keys else self._walk(value) for key, value in node.items()}
        return node


class TrajectoryRecorder:
    """Writes each trajectory given to `record` to `folder`, on a thread of its own."""

    def __init__(
        self, folder: str | Path, *, max_mb: float = DEFAULT_MAX_MB, redaction: Redaction = Redaction()
    ) -> None:
        if max_mb <= 0:
            raise ArgumentError(f"max_mb must be > 0, got {max_mb!r}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes = int(max_mb * 1024 * 1024)
        self.redaction = redaction
        self.written = 0
        """Trajectories written so far."""
        self._losses = _Losses(self.folder)
        self._queue: queue.Queue[object] = queue.Queue(_QUEUE_SIZE)
        self._file: IO[bytes] | None = None
        self._file_bytes = 0
        self._files = 0
        self._settled = 0
        self._closed = False
        self._thread = threading.Thread(target=self._write_all, name="agent-env-recorder", daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        """Trajectories not recorded so far, every one counted."""
        return self._losses.total

    @property
    def dropped_by_reason(self) -> dict[DropReason, int]:
        """`dropped`, by reason (a reason with no loss is absent)."""
        return self._losses.by_reason()

    @property
    def files(self) -> list[Path]:
        """The files written so far, oldest first."""
        return sorted(self.folder.glob("trajectories-*.jsonl"))

    def record(self, trajectory: Trajectory) -> None:
        """Queue `trajectory` to be written; never blocks (a full queue drops it, logged).

        It is made a line of JSON here, at once: a queue of model objects that outlive a collection
        of the young would push the server's whole heap through the garbage collector's full passes.
        """
        if self._closed:
            return
        line = self._line(trajectory)
        if line is None:
            return
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self._losses.count(
                "queue_full", "the recorder's queue is full (the disk is slower than the episodes)"
            )

    def flush(self, timeout_s: float = _CLOSE_WAIT_S) -> bool:
        """Wait until everything queued so far is written (or dropped); whether it was, in time."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def close(self) -> None:
        """Write what is queued (waiting at most `_CLOSE_WAIT_S`), then close the file."""
        if self._closed:
            return
        self._closed = True
        try:
            self._queue.put(_STOP, timeout=_CLOSE_WAIT_S)
        except queue.Full:
            unwritten = self._queue.qsize()
            log.error("the recorder could not stop in time: %d trajectories are not written", unwritten)
        else:
            self._thread.join(_CLOSE_WAIT_S)
        self._losses.log_total()

    def _write_all(self) -> None:
        while True:
            try:
                batch = [self._queue.get(timeout=_LOG_EVERY_S)]
            except queue.Empty:  # idle: a good moment to say how many were lost since the last line
                self._losses.log_total(due_only=True)
                continue
            time.sleep(_GATHER_S)
            with contextlib.suppress(queue.Empty):  # whatever else waits goes out in the same write
                while len(batch) < _BATCH:
                    batch.append(self._queue.get_nowait())
            try:
                lines = [item for item in batch if isinstance(item, bytes)]
                if lines:
                    self._write_counted(lines)
                if any(item is _STOP for item in batch):
                    self._close_file()
                    return
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _line(self, trajectory: Trajectory) -> bytes | None:
        """The trajectory as one line of UTF-8 JSON, redacted; None (and dropped) if it cannot be one."""
        try:
            if self.redaction.empty:
                return trajectory.model_dump_json().encode()
            data = self.redaction.apply(trajectory.model_dump(mode="json"))
            return json.dumps(data, ensure_ascii=False).encode()
        except Exception as exc:
            self._losses.count("unwritable", _unwritable(trajectory, exc))
            return None

    def _write_counted(self, lines: list[bytes]) -> None:
        """`_write`, which never raises: lines it had neither written nor dropped when it did are dropped."""
        self._settled = 0
        try:
            self._write(lines)
        except Exception as exc:  # the writer outlives whatever a disk or a file object raises
            self._close_file()
            lost = len(lines) - self._settled
            self._losses.count("write_failed", f"writing to {self.folder} failed: {exc!r}", lost)

    def _write(self, lines: list[bytes]) -> None:
        """Write `lines` in order: one write and one flush per file they go to, rolling as they fill it;
        `_settled` counts the lines written or dropped so far."""
        pending = [(line + b"\n", len(line) + 1) for line in lines]
        while pending:
            if (
                self._file is not None
                and self._file_bytes > 0
                and self._file_bytes + pending[0][1] > self.max_bytes
            ):
                self._close_file()
            room = self.max_bytes - (self._file_bytes if self._file is not None else 0)
            taken, size = 1, pending[0][1]
            while taken < len(pending) and size + pending[taken][1] <= room:
                size += pending[taken][1]
                taken += 1
            chunk, pending = pending[:taken], pending[taken:]
            try:
                file = self._open()
                file.write(b"".join(line for line, _ in chunk))
                file.flush()
            except Exception as exc:  # OSError (full, gone, read-only), or anything a file object raises
                self._close_file()
                self._losses.count("write_failed", f"writing to {self.folder} failed: {exc}", len(chunk))
                self._settled += len(chunk)
                continue
            self._file_bytes += size
            self.written += len(chunk)
            self._settled += len(chunk)

    def _open(self) -> IO[bytes]:
        """The file being written, opened if there is none."""
        if self._file is None:
            self._files += 1
            stamp = time.strftime("%Y%m%dT%H%M%S")
            path = self.folder / f"trajectories-{stamp}-{os.getpid()}-{self._files:04d}.jsonl"
            self._file = path.open("ab")
            self._file_bytes = path.stat().st_size
        return self._file

    def _close_file(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except Exception:
                log.warning("closing a trajectory file in %s failed", self.folder, exc_info=True)


def _unwritable(trajectory: Trajectory, exc: Exception) -> str:
    """Why a trajectory cannot be a line of UTF-8 JSON: where it is not valid Unicode, if that is why."""
    with contextlib.suppress(Exception):
        if (where := invalid_text(trajectory.model_dump(mode="python"))) is not None:
            return f"its {where} {NOT_UNICODE}"
    return f"it could not be written as JSON: {type(exc).__name__}: {exc}"


class _Losses:
    """Trajectories a recorder lost, by reason, from any thread; logged so that a loss is never silent
    and a burst of them is never a flood: the first with its reason, then the running total at most
    every `_LOG_EVERY_S` (on the next loss, or when the writer is idle) and at close."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._lock = threading.Lock()
        self._counts: dict[DropReason, int] = {}
        self.total = 0
        self._logged = 0
        self._logged_at = 0.0
        self._latest = ""

    def by_reason(self) -> dict[DropReason, int]:
        with self._lock:
            return dict(self._counts)

    def count(self, reason: DropReason, why: str, lost: int = 1) -> None:
        if lost <= 0:
            return
        with self._lock:
            self._counts[reason] = self._counts.get(reason, 0) + lost
            self.total += lost
            self._latest = why
            if self._logged == 0:
                self._log(
                    f"{_trajectories(self.total)} not recorded in {self._folder} ({self.total} so far): {why}"
                )
            elif time.monotonic() - self._logged_at >= _LOG_EVERY_S:
                self._log_total()

    def log_total(self, *, due_only: bool = False) -> None:
        """Log the running total if losses came since the last line (and, `due_only`, it is time)."""
        with self._lock:
            if self.total > self._logged and (
                not due_only or time.monotonic() - self._logged_at >= _LOG_EVERY_S
            ):
                self._log_total()

    def _log_total(self) -> None:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(self._counts.items()))
        self._log(
            f"{_trajectories(self.total)} not recorded in {self._folder} so far ({reasons}); "
            f"the latest: {self._latest}"
        )

    def _log(self, message: str) -> None:
        log.error("%s", message)
        self._logged, self._logged_at = self.total, time.monotonic()


def _trajectories(count: int) -> str:
    return f"{count} trajector{'y' if count == 1 else 'ies'}"
