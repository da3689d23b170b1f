"""A failed image build's log as a person reads it: the failing step and its error lines, without the
terminal's escape codes, its progress redraws or a retry said five times.

Build output is written for a terminal: colours and cursor moves (ANSI escapes), progress bars redrawn
with carriage returns (each line cleaned as a test script's output is, `agent_env._output_tail`), and
tools that retry (pip's `Retrying (Retry(total=4, ...))`, then 3, 2...). Kept raw, a tail of 20 lines
is mostly noise. `BuildLog` takes the stream as it comes, keeps what
the failure is about, within fixed bounds whatever the build prints, and `lines()` gives it.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from agent_env._output_tail import strip_escapes
from agent_env._unicode import valid_text

MAX_LINES = 20
"""Lines a failure shows at most (the failing step included)."""
MAX_LINE_CHARS = 400
"""A longer line is cut (a compiler's or a minified file's line can be megabytes)."""
MAX_ERROR_LINES = 8
"""The first lines of a step that look like errors, kept even when more output followed them."""

_STEP = re.compile(r"^(Step \d+/\d+ : |#\d+ \[|\[\d+/\d+\] )")
"""The start of a Dockerfile instruction: the classic builder's and BuildKit's ways of saying it."""
_NOISE = re.compile(
    r"^(---> |Removing intermediate container |Sending build context to Docker daemon|"
    r"Successfully built |Successfully tagged )"
)
"""The builder's own bookkeeping between steps: no failure is ever explained by it."""
_ERROR = re.compile(
    r"error|fail|fatal|denied|not found|no such|cannot|can't|unable|could not|couldn't|refused|"
    r"unreachable|timed? ?out|traceback|exception|returned a non-zero|^E: |^E\d|killed",
    re.IGNORECASE,
)
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")


@dataclass
class _Line:
    text: str
    shape: str
    """The line with its numbers blanked: a retry differs from the one before only in them."""
    repeats: int = 1

    def shown(self) -> str:
        more = self.repeats - 1
        return self.text if not more else f"{self.text}  (and {more} more like it)"


class BuildLog:
    """The lines of a build's output worth showing when it fails, kept as the build streams.

    What it keeps is bounded whatever the build prints: the last step started (the failing one, when
    the build fails), the first `MAX_ERROR_LINES` lines of that step's output that look like errors,
    and its last lines; consecutive lines alike but for their numbers (a tool's retries) are one line
    with their count."""

    def __init__(self, max_lines: int = MAX_LINES) -> None:
        self._max = max(4, max_lines)
        self._step: str | None = None
        self._errors: list[_Line] = []
        self._tail: deque[_Line] = deque(maxlen=self._max)
        self._count = 0
        """Lines of the step's output so far, each repeat counted."""
        self._partial = ""

    def add(self, chunk: str) -> None:
        """Take a piece of the build's output stream (several lines, or part of one)."""
        lines = (self._partial + chunk).split("\n")
        self._partial = lines.pop()[-MAX_LINE_CHARS * 4 :]
        for line in lines:
            self.add_line(line)

    def add_line(self, raw: str) -> None:
        """Take one whole line of output (the builder's final error message is one)."""
        line = strip_escapes(valid_text(raw[: MAX_LINE_CHARS * 4])).strip()
        if not line or _NOISE.match(line):
            return
        if len(line) > MAX_LINE_CHARS:
            line = line[: MAX_LINE_CHARS - 1] + "\u2026"
        if _STEP.match(line):
            self._step, self._errors, self._count = line, [], 0
            self._tail.clear()
            return
        self._count += 1
        shape = _NUMBERS.sub("#", line)
        if self._tail and self._tail[-1].shape == shape:
            self._tail[-1].repeats += 1
            return
        entry = _Line(line, shape)
        if len(self._errors) < MAX_ERROR_LINES and _ERROR.search(line):
            self._errors.append(entry)
        self._tail.append(entry)

    def lines(self) -> list[str]:
        """What to show: the step, its first error lines, then its last lines, at most `max_lines`
        in all, with a line saying how many were left out."""
        if self._partial.strip():
            self.add_line(self._partial)
            self._partial = ""
        head = [self._step] if self._step is not None else []
        room = self._max - len(head) - 1  # one line for what was left out
        tail = list(self._tail)
        early = [line for line in self._errors if all(line is not kept for kept in tail)]
        early = early[: room // 2]
        tail = tail[max(0, len(tail) - (room - len(early))) :]
        left_out = self._count - sum(line.repeats for line in (*early, *tail))
        gap = [f"... ({left_out} line{'s' if left_out != 1 else ''} left out)"] if left_out > 0 else []
        return [*head, *(line.shown() for line in early), *gap, *(line.shown() for line in tail)]
