"""THIRD_PARTY_NOTICES.md itself: one entry per distribution, one text per license, the file."""

from __future__ import annotations

import platform
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from tools.notices.closure import CORE, TRAINERS_OWN, Distribution, NoticesError, installed
from tools.notices.metadata import (
    LICENSE_TOKEN,
    OPERATORS,
    OVERRIDES,
    TEXT_SOURCES,
    TextSource,
    bundles_others,
    holders_of,
    license_ids,
    license_of,
    main_license_files,
    read_license_file,
    source_of,
    without_copyright,
)


@dataclass(frozen=True)
class Entry:
    """One distribution as the notices list it."""

    name: str
    version: str
    license: str
    holders: tuple[str, ...]
    source: str
    brought_by: tuple[str, ...]


@dataclass(frozen=True)
class LicenseText:
    """One license's text, shared by every listed package under it."""

    license: str
    text: str
    origin: str
    without_copyright: bool = True


def entries(by_area: Mapping[str, Mapping[str, Distribution]]) -> list[Entry]:
    """Every distribution any install brings, sorted by name; a package without a license is an error."""
    dists = {name: dist for closure_ in by_area.values() for name, dist in closure_.items()}
    listed = []
    for name in sorted(dists):
        dist = dists[name]
        brought_by = (CORE,) if name in by_area[CORE] else tuple(a for a in by_area if name in by_area[a])
        license_ = license_of(name, dist) or ""
        listed.append(
            Entry(name, dist.version, license_, holders_of(name, dist), source_of(name, dist), brought_by)
        )
    _require(
        [e.name for e in listed if not e.license],
        "no usable license metadata; read its license file, then add it to OVERRIDES in "
        "tools/notices/metadata.py",
    )
    _require(
        [e.name for e in listed if not e.holders],
        "no copyright line and no author; add its holder to OVERRIDES in tools/notices/metadata.py",
    )
    return listed


def _require(names: Sequence[str], problem: str) -> None:
    """Fail naming every distribution with the problem, so one run lists all the reviewing to do."""
    if names:
        raise NoticesError(f"{', '.join(names)}: {problem}")


def _from_source(license_: str, source: TextSource) -> LicenseText:
    """A license text read from the hand-reviewed file TEXT_SOURCES names."""
    dist = installed(canonicalize_name(source.dist), "TEXT_SOURCES in tools/notices/metadata.py")
    text = read_license_file(dist, source.path) or ""
    start = text.find(source.start) if source.start is not None else 0
    end = text.find(source.end, max(start, 0)) if source.end is not None else len(text)
    if not text or start < 0 or end < 0:
        raise NoticesError(
            f"{license_}: {source.dist} {dist.version} has no license file {source.path} holding "
            f"{source.start!r}...{source.end!r}; review its TEXT_SOURCES entry in tools/notices/metadata.py"
        )
    text = text[start:end]
    kept = text.strip("\n") if source.keep_copyright else without_copyright(text)
    origin = f"`{source.dist}` {dist.version}, `{source.path}`"
    return LicenseText(license_, kept, origin, not source.keep_copyright)


def _shipped_texts(
    license_: str, listed: Sequence[Entry], dists: Mapping[str, Distribution]
) -> list[LicenseText]:
    """The texts of the listed packages licensed under `license_` alone that ship a single license file."""
    texts = []
    for entry in listed:
        files = main_license_files(dists[entry.name])
        if entry.license == license_ and len(files) == 1:
            text = read_license_file(dists[entry.name], files[0]) or ""
            origin = f"`{entry.name}` {entry.version}, `{files[0]}`"
            texts.append(LicenseText(license_, without_copyright(text), origin))
    return [t for t in texts if t.text]


def license_text(license_: str, listed: Sequence[Entry], dists: Mapping[str, Distribution]) -> LicenseText:
    """One text for a license: TEXT_SOURCES' choice, else the wording most of its packages ship.

    Packages ship the same license with different copyright lines, wrapping and headers; the most common
    wording (whitespace aside, shortest on a tie) is the standard one rather than a package's variant.
    """
    if license_ in TEXT_SOURCES:
        return _from_source(license_, TEXT_SOURCES[license_])
    texts = _shipped_texts(license_, listed, dists)
    if not texts:
        users = ", ".join(e.name for e in listed if license_ in license_ids(e.license))
        raise NoticesError(
            f"no listed package ships the text of {license_} alone (used by {users}): "
            "add the file that holds it to TEXT_SOURCES in tools/notices/metadata.py"
        )
    counts = Counter(" ".join(t.text.split()) for t in texts)
    return min(texts, key=lambda t: (-counts[" ".join(t.text.split())], len(t.text), t.origin))


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell."""
    return re.sub(r"([\\|<*`])", r"\\\1", " ".join(text.split()))


def _fenced(text: str) -> str:
    """A code block that no backtick run in `text` can close early."""
    runs = [len(run) for run in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}text\n{text}\n{fence}"


def _area_label(area: str) -> str:
    """`core` as is; an extra as its install syntax."""
    return area if area == CORE else f"`[{area}]`"


def _linked(expression: str, anchors: Mapping[str, int]) -> str:
    """An SPDX expression with each license linked to its text below."""
    return LICENSE_TOKEN.sub(
        lambda m: m[0] if m[0] in OPERATORS else f"[{m[0]}](#license-{anchors[m[0]]})", expression
    )


def _preface(by_area: Mapping[str, Mapping[str, Distribution]], listed: Sequence[Entry]) -> str:
    """What the file is, where it comes from, and what it leaves out; one sentence a line, for clean diffs."""
    python = f"{platform.python_implementation()} {sys.version_info.major}.{sys.version_info.minor}"
    extras = ", ".join(_area_label(a) for a in by_area if a != CORE)
    counts = ", ".join(f"{_area_label(a)} {len(d)}" for a, d in by_area.items())
    trainers = "TRL and torch are the trainer's to install and pin: no extra declares them"
    if not {e.name for e in listed} & set(TRAINERS_OWN):
        trainers += ", none brings them, and neither is listed"
    return "\n".join(
        [
            "# Third-party notices",
            "",
            "Every distribution that installing `agentenv-framework` brings, with its version, license, "
            "copyright holder and source,",
            f"for the base install (`core`) and each extra ({extras}; "
            "`[dev]`, the tests' and linters' tools, is left out).",
            "Nothing is vendored: pip installs each package from PyPI, and none of their code is copied into "
            "this repository.",
            f"{trainers}.",
            "",
            "Generated by `make notices` (which `make lock` runs) from the metadata of the locked "
            "packages (`requirements/dev.lock`) as installed, then reviewed by hand;",
            f"environment markers were evaluated for {python} on {sys.platform}.",
            "Where a package's metadata is ambiguous or silent, "
            "a hand-reviewed table in the script gives the answer.",
            "Each license's text appears once, below the table, "
            "without the package-specific copyright lines:",
            "each package's holder is in the table.",
            "",
            f"Distributions each install brings, the base's included: {counts}.",
            "",
        ]
    )


def render(by_area: Mapping[str, Mapping[str, Distribution]]) -> str:
    """The whole THIRD_PARTY_NOTICES.md for these closures."""
    listed = entries(by_area)
    dists = {name: dist for closure_ in by_area.values() for name, dist in closure_.items()}
    licenses = sorted({i for e in listed for i in license_ids(e.license)}, key=str.lower)
    anchors = {license_: number for number, license_ in enumerate(licenses, start=1)}
    rows = [
        f"| {e.name} | {e.version} | {_linked(e.license, anchors)} | {_cell('; '.join(e.holders))} "
        f"| {e.source} | {', '.join(_area_label(a) for a in e.brought_by)} |"
        for e in listed
    ]
    sections = [_license_section(license_, anchors[license_], listed, dists) for license_ in licenses]
    table = "| package | version | license | copyright | source | brought by |\n|---|---|---|---|---|---|"
    bundling = ", ".join(e.name for e in listed if bundles_others(dists[e.name]))
    notes = [
        f"- {e.name}: {OVERRIDES[e.name].note}."
        for e in listed
        if e.name in OVERRIDES and OVERRIDES[e.name].note
    ]
    after = [
        "",
        "These packages also bundle code of other projects, whose licenses they install with their own (in "
        f"their .dist-info or next to the bundled code), not repeated here: {bundling}.",
        "",
        *(["Notes from the hand review:", "", *notes, ""] if notes else []),
    ]
    return "\n".join([_preface(by_area, listed), table, *rows, *after, "## License texts", "", *sections])


def _license_section(
    license_: str, number: int, listed: Sequence[Entry], dists: Mapping[str, Distribution]
) -> str:
    """One license's anchored heading, the packages under it, and its text."""
    found = license_text(license_, listed, dists)
    users = ", ".join(e.name for e in listed if license_ in license_ids(e.license))
    removed = ", its copyright lines removed" if found.without_copyright else ", whole"
    return (
        f'<a id="license-{number}"></a>\n\n### {number}. {license_}\n\n'
        f"Used by {users}. The text as shipped by {found.origin}{removed}.\n\n"
        f"{_fenced(found.text)}\n"
    )


# A package's row: its normalized name, then its version (PEP 440: a digit first; the header has none).
_ROW = re.compile(r"^\| ([a-z0-9][a-z0-9.-]*) \| ([0-9][^|\s]*) \|", re.MULTILINE)


def listed_versions(notices: str) -> dict[str, str]:
    """The packages a notices file lists in its table, with their versions."""
    return dict(_ROW.findall(notices))
