"""The folder `agent-env view` shows, read again at every look so that new lines show up.

A folder is re-listed at each read, and a file is parsed again only when its size or time changed:
a recorder appending to one file costs a re-read of that file alone. Lines that are not trajectories
are kept as `SkippedLine`s, so the page can say how many it left out and where.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from agent_env.recording import read_trajectories
from agent_env.trajectory import Trajectory

_WHY_CHARS = 300


class ViewError(Exception):
    """What `agent-env view` cannot show, and what to pass instead (one line, for the command)."""


@dataclass(frozen=True)
class Recorded:
    """A trajectory and the file it was read from."""

    trajectory: Trajectory
    file: str


@dataclass(frozen=True)
class SkippedLine:
    """A line of a trajectory file that is not a trajectory of this schema, and why."""

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
    stamp: tuple[int, int]
    episodes: tuple[Recorded, ...]
    skipped: tuple[SkippedLine, ...]


class TrajectoryFolder:
    """A folder of `*.jsonl` trajectory files (or one such file), read afresh at each `read`."""

    def __init__(self, where: str | Path) -> None:
        self.path = Path(where)
        self._parsed: dict[Path, _Parsed] = {}
        self._lock = threading.Lock()

    def check(self) -> Listing:
        """The first read, which must find a trajectory: else a `ViewError` saying what to pass."""
        what = (
            "a folder of trajectory files (*.jsonl, one trajectory a line, "
            "as agent-env serve --record writes them)"
        )
        if not self.path.exists():
            raise ViewError(f"{self.path} does not exist: pass {what}")
        listing = self.read()
        if not listing.episodes:
            found = f"{listing.files} .jsonl files" if self.path.is_dir() else "it"
            bad = f", {len(listing.skipped)} lines that are not" if listing.skipped else ""
            raise ViewError(f"{self.path} holds no trajectories ({found}{bad}): pass {what}")
        return listing

    def read(self) -> Listing:
        files = sorted(self.path.glob("*.jsonl")) if self.path.is_dir() else [self.path]
        with self._lock:
            parsed = [self._file(file) for file in files]
            self._parsed = {file: p for file, p in zip(files, parsed, strict=True) if p is not None}
        kept = [p for p in parsed if p is not None]
        return Listing(
            episodes=tuple(e for p in kept for e in p.episodes),
            skipped=tuple(s for p in kept for s in p.skipped),
            files=len(kept),
        )

    def _file(self, file: Path) -> _Parsed | None:
        try:
            status = file.stat()
        except OSError:  # removed between the listing and the read
            return None
        stamp = (status.st_mtime_ns, status.st_size)
        known = self._parsed.get(file)
        if known is not None and known.stamp == stamp:
            return known
        name = str(file.relative_to(self.path)) if self.path.is_dir() else file.name
        skipped: list[SkippedLine] = []

        def skip(_: Path, line: int, why: str) -> None:
            skipped.append(SkippedLine(name, line, why[:_WHY_CHARS]))

        try:
            episodes = tuple(Recorded(t, name) for t in read_trajectories(file, skipped=skip))
        except OSError as exc:
            return _Parsed(stamp, (), (SkippedLine(name, 0, f"unreadable: {exc}"),))
        return _Parsed(stamp, episodes, tuple(skipped))
