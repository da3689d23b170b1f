"""Named entries of the dev/test lock, as they stand in requirements/dev.lock (pin, hashes, notes).

    python -m tools.lock_entries uv > uv.lock

`make install` takes uv from the lock this way (pip checks its hashes), and uv then installs the rest
of the lock. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import sys

from tools.core_lock import LOCK, entries, normalized


def named_entries(lock: str, names: list[str]) -> list[str]:
    """The lock's entries for `names`, in the order asked; a name the lock does not pin is an error."""
    locked = entries(lock)
    missing = [name for name in names if normalized(name) not in locked]
    if missing:
        raise SystemExit(f"lock_entries: {', '.join(missing)} not in {LOCK.name}: run make lock")
    return [locked[normalized(name)] for name in names]


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: python -m tools.lock_entries NAME [NAME ...]")
    sys.stdout.write("".join(named_entries(LOCK.read_text(encoding="utf-8"), argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
