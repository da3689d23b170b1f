"""Reading trajectories back: a file's, or a folder's `*.jsonl` files', skipping (and saying so)
every line that is not a trajectory of this schema. Writing them is `agent_env._trajectory_recorder`'s.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from agent_env._error_types import validation_problems
from agent_env._regular_files import NotReadError, jsonl_names, look, open_folder, open_text
from agent_env._trajectory import Trajectory

log = logging.getLogger("agent_env.recording")
"""The recording's log: what the recorder lost, and the lines read back that are not trajectories."""


def read_trajectories(
    where: str | Path, *, skipped: Callable[[Path, int, str], None] | None = None
) -> Iterator[Trajectory]:
    """Every trajectory in a file, or in a folder's `*.jsonl` files (oldest name first); a line that is
    not a trajectory of this schema is skipped, logged with its file and line, or, given `skipped`,
    handed to it (file, line, why) instead, for a caller that reports them itself. In a folder, only
    regular files are read: a link, a FIFO or a device is skipped unopened, as line 0 with why
    (`agent_env._regular_files`). Bytes that are not UTF-8 are read as U+FFFD, so one bad line cannot
    hide the rest of its file."""
    path = Path(where)
    report = skipped or _log_skipped
    if not path.is_dir():
        yield from _read_file(str(path), path, None, report)
        return
    folder = open_folder(path)
    try:
        for name in jsonl_names(folder):
            try:
                yield from _read_file(name, path / name, folder, report)
            except FileNotFoundError:  # removed since the listing
                continue
    finally:
        os.close(folder)


def _read_file(
    name: str, shown: Path, folder: int | None, report: Callable[[Path, int, str], None]
) -> Iterator[Trajectory]:
    try:
        look(name, folder)
        opened, _ = open_text(name, folder)
    except NotReadError as exc:
        report(shown, 0, exc.why)
        return
    with opened as lines:
        yield from trajectories_in(lines, shown, skipped=report)


def _log_skipped(file: Path, line: int, why: str) -> None:
    if line:
        log.warning("%s:%d is not a trajectory: %s", file, line, why)
    else:
        log.warning("%s is not read: %s", file, why)


def trajectories_in(
    lines: Iterable[str], file: Path, *, skipped: Callable[[Path, int, str], None] | None = None
) -> Iterator[Trajectory]:
    """The trajectories among `lines`, those of `file` (which names it in what is skipped), for a
    reader that opens the file itself (`agent-env view`); as `read_trajectories` otherwise."""
    report = skipped or _log_skipped
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield Trajectory.model_validate_json(line)
        except ValidationError as exc:
            problems = validation_problems(exc, noun="field")
            report(
                file,
                number,
                "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""),
            )
