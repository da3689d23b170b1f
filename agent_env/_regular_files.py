"""Reading a folder's files without following a link out of it or waiting on one that is not a file.

A FIFO's open blocks until a writer comes (for good, if none does), a device may never end, and a
symbolic link may point anywhere on the machine. So a folder of trajectories is read by name relative
to the folder's descriptor: each name is looked at without following a link, only regular files are
opened, without blocking and without following a link, and the open descriptor is checked again, so
a file swapped after its look is still never read unless it is regular. `NotReadError` says why a file was
left alone. `agent-env view` and `read_trajectories` both read this way.
"""

from __future__ import annotations

import os
import stat
from typing import TextIO

from agent_env._errors import AgentEnvError

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotReadError(AgentEnvError):
    """A file left unread, and why (a link, not a regular file)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def kind_of(mode: int) -> str | None:
    """What a file that is not regular is ("a FIFO", ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "of another kind")


def open_folder(path: str | os.PathLike[str]) -> int:
    """A descriptor of the folder at `path`, for the calls below (close it with `os.close`)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def jsonl_names(folder: int) -> list[str]:
    """The folder's `*.jsonl` names, hidden ones aside, in name order (subfolders are not walked)."""
    return sorted(
        entry.name
        for entry in os.scandir(folder)
        if entry.name.endswith(".jsonl") and not entry.name.startswith(".")
    )


def look(name: str, folder: int | None) -> os.stat_result:
    """`name`'s status within `folder` (a link not followed), or, without a folder, the path the
    user named (followed: they chose it); `NotReadError` unless it is a regular file."""
    looked = os.stat(name, dir_fd=folder, follow_symlinks=folder is None)
    if stat.S_ISLNK(looked.st_mode):
        raise NotReadError(f"a symbolic link (to {os.readlink(name, dir_fd=folder)}): links are not followed")
    if (kind := kind_of(looked.st_mode)) is not None:
        raise NotReadError(f"not a regular file ({kind}): not read")
    return looked


def open_text(name: str, folder: int | None) -> tuple[TextIO, os.stat_result]:
    """`name` opened as UTF-8 text (bytes that are not read as U+FFFD) and its status, as `look`
    finds it, checked again on the open descriptor; never blocks and never follows a link within a
    folder."""
    opened = os.open(name, _OPEN_FLAGS | (os.O_NOFOLLOW if folder is not None else 0), dir_fd=folder)
    try:
        status = os.fstat(opened)
        if (kind := kind_of(status.st_mode)) is not None:
            raise NotReadError(f"not a regular file ({kind}): not read")
        return os.fdopen(opened, encoding="utf-8", errors="replace"), status
    except BaseException:
        os.close(opened)
        raise
