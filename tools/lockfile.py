"""The dev/test lock, requirements/dev.lock: what `make install` installs, and `make lock` writes.

The lock is uv's requirements output (`name==version`, each with its hashes); only the pins matter here.
"""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "dev.lock"
PINS = ROOT / "requirements" / "pins.in"

_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)", re.MULTILINE)


def locked(lock: Path = LOCK) -> dict[NormalizedName, str]:
    """Every distribution the lock pins, by normalized name, with its version."""
    text = lock.read_text(encoding="utf-8")
    return {canonicalize_name(m["name"]): m["version"] for m in _PIN.finditer(text)}
