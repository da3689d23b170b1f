"""The folder `agent-env view` shows, read again at every look so that new lines show up.

A folder is re-listed at each read, and a file is parsed again only when its size or time changed:
a recorder appending to one file costs a re-read of that file alone. Lines that are not trajectories
are kept as `SkippedLine`s, so the page can say how many it left out and where.

Only the folder's own regular files are read, and none is waited on: a FIFO, socket, device or
folder named `*.jsonl` is skipped unopened (a FIFO's open would block until a writer came, holding
every later read behind the lock), and so is a symbolic link, wherever it points: one out of the
folder would show what the folder does not hold, and one within it shows a file read anyway. Each is
a `SkippedLine` of line 0 saying why. Subfolders are not walked. Files are read as
`agent_env._regular_files` reads them, by name relative to the folder's descriptor.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agent_env._errors import AgentEnvError
from agent_env._regular_files import NotReadError, jsonl_names, kind_of, look, open_folder, open_text
from agent_env._trajectory import Trajectory
from agent_env._trajectory_reader import trajectories_in

_WHY_CHARS = 300


class ViewError(AgentEnvError):
    """What `agent-env view` cannot show, and what to pass instead (one line, for the command)."""


@dataclass(frozen=True)
class Recorded:
    """A trajectory and the file it was read from."""

    trajectory: Trajectory
    file: str


@dataclass(frozen=True)
class SkippedLine:
    """A line of a trajectory file that is not a trajectory of this schema, and why; line 0 is a
    whole file left unread (not a regular file, a link, unreadable)."""

    file: str
    line: int
    why: str


@dataclass(frozen=True)
class Listing:
    """What the folder holds at one read: its trajectories in file order, and the lines skipped."""

    episodes: tuple[Recorded, ...]
    skipped: tuple[SkippedLine, ...]
    files: int


@dataclass(frozen=True)
class _Parsed:
    stamp: tuple[int, ...]
    episodes: tuple[Recorded, ...]
    skipped: tuple[SkippedLine, ...]


class TrajectoryFolder:
    """A folder of `*.jsonl` trajectory files (or one such file), read afresh at each `read`.

    The folder (or file) named is followed if it is a link: the user chose it. Within it, only regular
    files are read (the module says why); reads share a lock, so a changed file is parsed once.
    """

    def __init__(self, where: str | Path) -> None:
        self.path = Path(where)
        self._parsed: dict[str, _Parsed] = {}
        self._lock = threading.Lock()

    def check(self) -> Listing:
        """The first read, which must find a trajectory: else a `ViewError` saying what to pass."""
        what = (
            "a folder of trajectory files (*.jsonl, one trajectory a line, "
            "as agent-env serve --record writes them)"
        )
        if not self.path.exists():
            raise ViewError(f"{self.path} does not exist: pass {what}")
        if not self.path.is_dir() and (kind := kind_of(self.path.stat().st_mode)) is not None:
            raise ViewError(f"{self.path} is not a regular file ({kind}): pass {what}")
        listing = self.read()
        if not listing.episodes:
            found = f"{listing.files} .jsonl files" if self.path.is_dir() else "it"
            lines = sum(1 for s in listing.skipped if s.line)
            unread = len(listing.skipped) - lines
            bad = (f", {lines} lines that are not" if lines else "") + (
                f", {unread} not read" if unread else ""
            )
            raise ViewError(f"{self.path} holds no trajectories ({found}{bad}): pass {what}")
        return listing

    def read(self) -> Listing:
        with self._lock:
            if self.path.is_dir():
                read = self._folder()
            else:
                read = [(self.path.name, self._file(str(self.path), self.path.name, None))]
            kept = [(name, p) for name, p in read if p is not None]
            self._parsed = {name: p for name, p in kept if isinstance(p, _Parsed)}
        return Listing(
            episodes=tuple(e for _, p in kept if isinstance(p, _Parsed) for e in p.episodes),
            skipped=tuple(s for _, p in kept for s in (p.skipped if isinstance(p, _Parsed) else (p,))),
            files=len(kept),
        )

    def _folder(self) -> list[tuple[str, _Parsed | SkippedLine | None]]:
        try:
            folder = open_folder(self.path)
        except OSError:  # removed or replaced since the look: nothing to show this time
            return []
        try:
            return [(name, self._file(name, name, folder)) for name in jsonl_names(folder)]
        finally:
            os.close(folder)

    def _file(self, name: str, shown: str, folder: int | None) -> _Parsed | SkippedLine | None:
        """`name` (within `folder`'s descriptor, else the path the user named) parsed, or why it is
        not; None if it is gone. A file unchanged since its last read is not parsed again."""
        try:
            looked = look(name, folder)
            known = self._parsed.get(shown)
            if known is not None and known.stamp == _stamp(looked):
                return known
            opened, status = open_text(name, folder)
        except FileNotFoundError:  # removed between the listing and the read
            return None
        except NotReadError as exc:
            return _unread(shown, exc.why)
        except OSError as exc:
            return _unread(shown, f"unreadable: {exc.strerror or exc}")
        try:
            with opened as lines:
                return _parse(lines, shown, _stamp(status))
        except OSError as exc:
            return _unread(shown, f"unreadable: {exc.strerror or exc}")


def _parse(lines: Iterable[str], shown: str, stamp: tuple[int, ...]) -> _Parsed:
    skipped: list[SkippedLine] = []

    def skip(_: Path, line: int, why: str) -> None:
        skipped.append(SkippedLine(shown, line, why[:_WHY_CHARS]))

    episodes = tuple(Recorded(t, shown) for t in trajectories_in(lines, Path(shown), skipped=skip))
    return _Parsed(stamp, episodes, tuple(skipped))


def _unread(shown: str, why: str) -> SkippedLine:
    return SkippedLine(shown, 0, why[:_WHY_CHARS])


def _stamp(status: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is written to or replaced."""
    return (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_size)
