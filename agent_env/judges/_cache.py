"""Verdicts kept, so an identical judgement is asked once: in memory (the most recent `max_entries`,
per process) and, when given a folder, on disk, where `replay` and later evals find them again.

The key is the digest of the whole request (`agent_env.judges._transcript.digest`): the rubric, the
transcript as the judge reads it, the model, the scale and the sampling settings. A file on disk is
`FOLDER/ab/abcdef....json`, `{"verdicts": [{"score": N, "reason": TEXT}, ...]}` (one, or a relative
judge's group's), written whole (to a file beside it, then renamed); one that does not read
back as a verdict is a miss, logged, and written again. Only verdicts are kept, never a failure.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path

from agent_env.judges._verdict import Verdict

DEFAULT_MEMORY_ENTRIES = 4096
"""Verdicts a process keeps in memory: a few MiB at most (a reason is at most 2,000 characters)."""

log = logging.getLogger("agent_env.judges")


class VerdictCache:
    """The most recent verdicts by key, in memory; and, with `folder`, every verdict on disk."""

    def __init__(
        self, folder: str | Path | None = None, *, max_entries: int = DEFAULT_MEMORY_ENTRIES
    ) -> None:
        self.folder = Path(folder) if folder is not None else None
        self.max_entries = max_entries
        self._memory: OrderedDict[str, list[Verdict]] = OrderedDict()

    def remembered(self, key: str) -> list[Verdict] | None:
        """The verdicts kept in memory for `key` (one, or a group's), now the most recent; None if none."""
        verdicts = self._memory.get(key)
        if verdicts is not None:
            self._memory.move_to_end(key)
            return list(verdicts)
        return None

    def remember(self, key: str, verdicts: list[Verdict]) -> None:
        self._memory[key] = list(verdicts)
        self._memory.move_to_end(key)
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)

    def read(self, key: str) -> list[Verdict] | None:
        """The verdicts on disk for `key` (blocking: run it off the loop); None without a folder or them."""
        path = self._path(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            _unread(path, str(exc))
            return None
        entries = data.get("verdicts") if isinstance(data, dict) else None
        verdicts = [_verdict(entry) for entry in entries] if isinstance(entries, list) and entries else [None]
        if any(verdict is None for verdict in verdicts):
            _unread(path, 'no "verdicts", each an integer score and a text reason')
            return None
        return [verdict for verdict in verdicts if verdict is not None]

    def write(self, key: str, verdicts: list[Verdict]) -> None:
        """Keep `verdicts` on disk (blocking: run it off the loop); a failure is logged, not raised."""
        path = self._path(key)
        if path is None:
            return
        aside = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        kept = {"verdicts": [{"score": verdict.score, "reason": verdict.reason} for verdict in verdicts]}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            aside.write_text(json.dumps(kept), encoding="utf-8")
            os.replace(aside, path)
        except OSError as exc:
            log.warning("judge cache: cannot write %s (%s); the verdict is kept in memory only", path, exc)
            with contextlib.suppress(OSError):
                aside.unlink(missing_ok=True)

    def _path(self, key: str) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / key[:2] / f"{key}.json"


def _verdict(entry: object) -> Verdict | None:
    score = entry.get("score") if isinstance(entry, dict) else None
    reason = entry.get("reason") if isinstance(entry, dict) else None
    if not isinstance(score, int) or isinstance(score, bool) or not isinstance(reason, str):
        return None
    return Verdict(score, reason)


def _unread(path: Path, why: str) -> None:
    log.warning("judge cache: %s does not read as a verdict (%s); asking the judge again", path, why)
