"""The end of a command's output, as a person reads it in a trajectory, `replay` or the viewer.

A test script's output is written for a terminal: colours and cursor moves (ANSI escape codes),
progress bars redrawn with carriage returns. `output_tail` keeps what a terminal would have left on
screen, line by line, and only the last lines, within a byte bound, as valid Unicode: what failed
is nearly always at the end, and a trajectory holds one of these per verifier.
"""

from __future__ import annotations

import re

from agent_env._unicode import valid_text

TAIL_LINES = 50
"""The most lines a verifier's output tail keeps."""
TAIL_BYTES = 4096
"""The most UTF-8 bytes a verifier's output tail keeps."""

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erasing
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks
    r"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # the other escapes (charset choice, keypad modes), a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # CSI in its one-character form
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Control characters left once the escapes are gone (a tab and a newline are text)."""


def strip_escapes(text: str) -> str:
    """`text` without ANSI escape codes and other control characters, each line as a terminal would
    leave it once its carriage returns had redrawn it (the text after the last one)."""
    text = _ESCAPES.sub("", text).replace("\r\n", "\n")
    lines = [line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n")]
    return _CONTROLS.sub("", "\n".join(lines))


def output_tail(text: str, *, lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
    """The last `lines` lines of `text` (at most `max_bytes` of UTF-8, cut at a line where it can be),
    without escape codes, trailing blank lines and trailing spaces; valid Unicode; "" for no output."""
    kept = [line.rstrip() for line in strip_escapes(valid_text(text)).split("\n")]
    while kept and not kept[-1]:
        kept.pop()
    kept = kept[-lines:] if lines > 0 else []
    size = sum(len(line.encode()) + 1 for line in kept) - 1
    while len(kept) > 1 and size > max_bytes:
        size -= len(kept.pop(0).encode()) + 1
    while kept and not kept[0]:
        kept.pop(0)
    tail = "\n".join(kept)
    if len(tail.encode()) > max_bytes:  # one line longer than the bound: its end
        tail = tail.encode()[-max_bytes:].decode("utf-8", errors="ignore")
    return tail
