"""THIRD_PARTY_NOTICES.md, generated from the locked packages' metadata, as `make install` installed them.

Installing agentenv-framework (its base, or an extra other than `dev`) brings a whole closure of
distributions, each under its own license. The notices list every one of them, so the list is computed
from what is installed, which must be exactly the lock (requirements/dev.lock), rather than kept by hand:
a dependency that starts requiring something new shows up when the lock is next made, and the diff is
what gets reviewed. `make lock` regenerates them with the lock.

    python -m tools.notices --output THIRD_PARTY_NOTICES.md   # `make notices`; then review the diff
    python -m tools.notices --check                           # exit 1, naming what differs, when stale

Each exits 2, writing nothing, when the installed packages are not the locked ones (naming them), or
when the metadata needs a hand review (naming what to add to OVERRIDES or TEXT_SOURCES).

pip-licenses was weighed for reading each distribution, and left out. Over the locked set it gives
the license as the metadata spells it (for 36 of the 117 packages not the SPDX expression listed
here, mostly a classifier such as 'BSD License'), reads only the first license file of the 7 that
ship several (cryptography's LICENSE, LICENSE.APACHE and LICENSE.BSD), and names authors, not
copyright holders. With the SPDX
mapping, the license files and the holders done here anyway, it would only have read the Author and
Home-page fields.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.notices.closure import NOTICES, REGENERATE, NoticesError, closures
from tools.notices.render import listed_versions, render


def _changes(committed: str, generated: str) -> list[str]:
    """The packages that came, went or changed version between two notices files."""
    old, new = listed_versions(committed), listed_versions(generated)
    return [
        *(f"  new: {n} {new[n]}" for n in sorted(new.keys() - old.keys())),
        *(f"  gone: {n} {old[n]}" for n in sorted(old.keys() - new.keys())),
        *(
            f"  version: {n} {old[n]} -> {new[n]}"
            for n in sorted(old.keys() & new.keys())
            if old[n] != new[n]
        ),
    ]


def stale(committed: str, generated: str, name: str) -> str | None:
    """What differs between the committed notices and the generated ones, None when they agree."""
    if committed == generated:
        return None
    diff = difflib.unified_diff(committed.splitlines(), generated.splitlines(), n=0, lineterm="")
    lines = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    shown = [f"  {line}" for line in lines[:20]]
    if len(lines) > 20:
        shown.append(f"  ... and {len(lines) - 20} more lines")
    return "\n".join(
        [
            f"{name} is out of date with the installed packages:",
            *_changes(committed, generated),
            "  the lines that differ (- committed, + generated):",
            *shown,
            f"Regenerate it with `{REGENERATE}` and review the diff.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print or write the notices, or with --check compare them with the committed file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1, naming what differs, if FILE is stale")
    mode.add_argument("--output", type=Path, help="write the notices to this file, once they are complete")
    parser.add_argument(
        "--file", type=Path, default=NOTICES, help="the notices --check compares (%(default)s)"
    )
    args = parser.parse_args(argv)
    try:
        generated = render(closures())
    except NoticesError as error:
        print(f"notices: {error}", file=sys.stderr)
        return 2
    if args.check:
        committed = args.file.read_text(encoding="utf-8") if args.file.exists() else ""
        problem = stale(committed, generated, args.file.name)
        if problem:
            print(problem, file=sys.stderr)
            return 1
    elif args.output is not None:
        args.output.write_text(generated, encoding="utf-8")
    else:
        # UTF-8 whatever the locale: holders' names are not ASCII.
        sys.stdout.buffer.write(generated.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
