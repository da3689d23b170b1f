"""THIRD_PARTY_NOTICES.md, generated from the installed packages' metadata.

Installing agentenv-framework (its base, or an extra other than `dev`) brings a whole closure of
distributions, each under its own license. The notices list every one of them, so the list is computed
from what pip installed rather than kept by hand: a dependency that starts requiring something new shows up
at the next run, and the diff is what gets reviewed.

    python tools/notices.py > THIRD_PARTY_NOTICES.md    # regenerate, then review the diff by hand
    python tools/notices.py --check                     # exit 1, naming what differs, when it is stale

Either exits 2 when the metadata needs a hand review, naming what to add to OVERRIDES or TEXT_SOURCES.
"""

from __future__ import annotations

import argparse
import difflib
import email.utils
import functools
import importlib.metadata
import platform
import re
import sys
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
NOTICES = ROOT / "THIRD_PARTY_NOTICES.md"
SELF = canonicalize_name("agentenv-framework")
CORE = "core"
# The tests' and linters' tools: installed for development, never with the package by its users.
UNLISTED_EXTRAS = frozenset({"dev"})
# Installed by the trainer, not by any extra; the preface says so while neither shows up in a closure.
TRAINERS_OWN = ("trl", "torch")
REGENERATE = "python tools/notices.py > THIRD_PARTY_NOTICES.md"

Distribution = importlib.metadata.Distribution


class NoticesError(Exception):
    """The installed metadata cannot give a complete answer; the message says what to install or add."""


# ---------------------------------------------------------------------------------------------------------
# What each install brings


def declared(pyproject: Path = PYPROJECT) -> dict[str, list[Requirement]]:
    """Each install's own requirements as pyproject.toml declares them: `core` (the base), then each extra."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    areas = {CORE: [Requirement(text) for text in project.get("dependencies", [])]}
    for extra, requirements in project.get("optional-dependencies", {}).items():
        if extra not in UNLISTED_EXTRAS:
            areas[extra] = [Requirement(text) for text in requirements]
    return areas


def included_extras(area: str, areas: Mapping[str, Sequence[Requirement]]) -> list[str]:
    """The extras `area` includes by requiring `agentenv-framework[...]`, followed transitively, sorted."""
    found: set[str] = set()
    pending = [area]
    while pending:
        for requirement in areas[pending.pop()]:
            if canonicalize_name(requirement.name) == SELF:
                new = requirement.extras - found
                found |= new
                pending.extend(new)
    return sorted(found - {area})


def install_requirements(area: str, areas: Mapping[str, Sequence[Requirement]]) -> list[Requirement]:
    """What installing `agentenv-framework[area]` asks for besides itself: base, extra, its includes."""
    parts = [CORE] if area == CORE else [CORE, area, *included_extras(area, areas)]
    return [r for part in parts for r in areas[part] if canonicalize_name(r.name) != SELF]


def _applies(requirement: Requirement, extra: str) -> bool:
    """Whether a requirement holds here, for the distribution's `extra` ("" for the distribution alone)."""
    return requirement.marker is None or requirement.marker.evaluate({"extra": extra})


def _installed(name: NormalizedName, needed_by: str) -> Distribution:
    """The installed distribution `name`; missing, the notices would be incomplete, so it is an error."""
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise NoticesError(
            f"{name} (required by {needed_by}) is not installed here, so its license cannot be read: "
            "install the package with every extra first (make install), then run again"
        ) from None


def closure(
    requirements: Iterable[Requirement], needed_by: str = "pyproject.toml"
) -> dict[str, Distribution]:
    """Every installed distribution that installing `requirements` brings, following markers and extras.

    Keyed by normalized name. A distribution's extras are followed only where a requirement asks for them.
    """
    found: dict[str, Distribution] = {}
    seen: set[tuple[str, str]] = set()
    pending = [(r, needed_by) for r in requirements if _applies(r, "")]
    while pending:
        requirement, parent = pending.pop()
        name = canonicalize_name(requirement.name)
        if name not in found:
            found[name] = _installed(name, parent)
        for extra in ("", *sorted(requirement.extras)):
            if (name, extra) not in seen:
                seen.add((name, extra))
                requires = (Requirement(text) for text in found[name].requires or [])
                pending.extend((r, name) for r in requires if _applies(r, extra))
    found.pop(SELF, None)
    return found


def closures(pyproject: Path = PYPROJECT) -> dict[str, dict[str, Distribution]]:
    """For each install (`core`, then each extra), every distribution it brings, the base's included."""
    areas = declared(pyproject)
    return {area: closure(install_requirements(area, areas)) for area in areas}


# ---------------------------------------------------------------------------------------------------------
# Hand-reviewed answers where the metadata is ambiguous, silent or wrong


@dataclass(frozen=True)
class Override:
    """What a distribution's metadata cannot say: its license as SPDX, its copyright holder, its source."""

    why: str
    license: str | None = None
    holder: str | None = None
    source: str | None = None
    note: str | None = None


# Reviewed by hand against each distribution's installed license file and metadata (versions as of the last
# review: groovy 0.1.2, jinja2 3.1.6, lazy-importer 0.1.0, pyperclip 1.11.0, python-dateutil 2.9.0.post0,
# safehttpx 0.1.7, semantic-version 2.10.0, tqdm 4.70.1, typing-extensions 4.16.0). A `note` is printed
# under the table, for a reader to see what was decided.
_SHIPS_APACHE = (
    "its metadata says MIT (a classifier), but the only license text it ships is Apache-2.0's (unfilled); "
    "listed under the terms it ships"
)
OVERRIDES: dict[str, Override] = {
    "groovy": Override(_SHIPS_APACHE, license="Apache-2.0", note=_SHIPS_APACHE),
    "jinja2": Override(
        "its only license metadata is the classifier 'BSD License'; LICENSE.txt has the three clauses",
        license="BSD-3-Clause",
    ),
    "lazy-importer": Override(
        "its metadata names no author and no URL, and its LICENSE is Apache's unfilled template; "
        "Arch's and Gentoo's packages name the upstream repository, Paul Ganssle's",
        holder="Paul Ganssle and contributors (the upstream repository's; the package names no holder)",
        source="https://github.com/pganssle/lazy_importer",
    ),
    "pyperclip": Override(
        "License says 'BSD'; LICENSE.txt has the three clauses ('Neither the name of ...')",
        license="BSD-3-Clause",
    ),
    "python-dateutil": Override(
        "License says 'Dual License'; LICENSE: contributions since 2017-12-01 are Apache-2.0, "
        "and the BSD-3-Clause text applies to all code",
        license="Apache-2.0 AND BSD-3-Clause",
    ),
    "safehttpx": Override(_SHIPS_APACHE, license="Apache-2.0", note=_SHIPS_APACHE),
    "semantic-version": Override("License says 'BSD'; LICENSE has two clauses", license="BSD-2-Clause"),
    "tqdm": Override(
        "LICENCE states each holder as 'MPL-2.0 2015-2026 (c) Casper da Costa-Luis' and the like",
        holder="(c) 2015-2026 Casper da Costa-Luis (MPL-2.0); (c) 2016 Google Inc., (c) 2013 Noam "
        "Yorav-Raphael and the other authors (MIT)",
    ),
    "typing-extensions": Override(
        "its LICENSE is Python's: the history, then the PSF license, whose notice names the holder",
        holder="Copyright (c) 2001-2023 Python Software Foundation; All Rights Reserved",
    ),
}


@dataclass(frozen=True)
class TextSource:
    """Where a license's full text is read from when no distribution licensed under it alone ships it."""

    dist: str
    path: str
    why: str
    start: str | None = None
    end: str | None = None
    keep_copyright: bool = False


# Reviewed by hand: each file holds the full text of its license (from `start`, up to `end`, where given).
TEXT_SOURCES: dict[str, TextSource] = {
    "MPL-2.0": TextSource(
        "pathspec",
        "LICENSE",
        "certifi and tqdm ship only MPL's Exhibit A notice; pathspec (mypy's dependency) ships the text",
    ),
    "0BSD": TextSource("numpy", "numpy/_core/src/common/pythoncapi-compat/COPYING", "numpy bundles it"),
    "Zlib": TextSource("numpy", "numpy/_core/include/numpy/libdivide/LICENSE.txt", "numpy bundles it"),
    "CC0-1.0": TextSource(
        "numpy", "numpy/_core/src/highway/LICENSE", "numpy bundles it", start="Creative Commons Legal Code"
    ),
    "MIT-CMU": TextSource(
        "pillow",
        "LICENSE",
        "pillow's LICENSE goes on with the licenses of the libraries its wheels bundle",
        start="By obtaining, using",
        end="\n----",
    ),
    "PSF-2.0": TextSource(
        "typing-extensions",
        "LICENSE",
        "the PSF license quotes the copyright notices of Python's history as part of its terms",
        keep_copyright=True,
    ),
}


# ---------------------------------------------------------------------------------------------------------
# Licenses

# Free-text names and classifiers that mean one SPDX license; a bare "BSD" is not one of them.
_ALIASES = {
    "mit license": "MIT",
    "apache 2.0": "Apache-2.0",
    "apache license 2.0": "Apache-2.0",
    "apache license, version 2.0": "Apache-2.0",
    "apache software license": "Apache-2.0",
    "isc license": "ISC",
    "isc license (iscl)": "ISC",
    "mozilla public license 2.0 (mpl 2.0)": "MPL-2.0",
    "the unlicense (unlicense)": "Unlicense",
    "python software foundation license": "PSF-2.0",
}
_OPERATORS = frozenset({"AND", "OR", "WITH"})
_LICENSE_TOKEN = re.compile(r"[A-Za-z0-9.+-]+")


def _field(dist: Distribution, name: str) -> str | None:
    """A metadata field's first value, None when absent or the old placeholder UNKNOWN."""
    values = dist.metadata.get_all(name) or []
    return next((v.strip() for v in values if v.strip() and v.strip() != "UNKNOWN"), None)


def _spdx(text: str) -> str | None:
    """`text` as a canonical SPDX expression, when it is one or obviously names one."""
    text = _ALIASES.get(text.strip().lower(), text.strip())
    try:
        return str(canonicalize_license_expression(text))
    except InvalidLicenseExpression:
        return None


def license_of(name: str, dist: Distribution) -> str | None:
    """The license as SPDX: the override, License-Expression, a short License field, or one classifier."""
    if (override := OVERRIDES.get(name)) and override.license:
        return override.license
    if expression := _field(dist, "License-Expression"):
        return _spdx(expression)
    field = _field(dist, "License")
    if field and "\n" not in field and len(field) <= 100 and (spdx := _spdx(field)):
        return spdx
    classifiers = dist.metadata.get_all("Classifier") or []
    licenses = [c.rsplit(" :: ", 1)[-1] for c in classifiers if c.startswith("License ::")]
    # Several classifiers do not say whether they combine with AND or OR: that is the override table's job.
    return _spdx(licenses[0]) if len(licenses) == 1 else None


def license_ids(expression: str) -> list[str]:
    """The licenses an SPDX expression combines, each needing its text."""
    return [t for t in _LICENSE_TOKEN.findall(expression) if t not in _OPERATORS]


# ---------------------------------------------------------------------------------------------------------
# License files and copyright lines

_LICENSE_FILE = re.compile(r"(?i)^(?:licen[cs]es?|copying)(?:[._-][\w.-]*)?$")
_NOT_LICENSE_FILE = (".py", ".pyc", ".pyi")
# Metadata 2.4 puts license files in .dist-info/licenses; older maturin, in .dist-info/license_files.
_LICENSE_FOLDERS = ("licenses", "license_files")
# "Copyright (c) 2020 X", "(c) 2020 X", "© 2020 X", "Copyright The X authors"; not the license's own words
# ("copyright notice", "COPYRIGHT HOLDERS BE LIABLE", "(c) You must retain").
_COPYRIGHT = re.compile(
    r"^\W*(?:(?:Copyright|COPYRIGHT)\s*(?:\([cC]\)|©)?\s*:?\s*(?=\d|©|\([cC]\)|"
    r"(?!(?i:notice|holders?|owners?|licen[cs]e|statement|and|law|protection|claim|information|on|of)\b)"
    r"[A-Za-z])|(?:\([cC]\)|©)\s*(?=\d))"
)
# A license template's blanks, never filled in: not anyone's copyright.
_TEMPLATE = re.compile(
    r"(?i)\[yyyy\]|<year>|\{yyyy\}|\[name of copyright owner\]|<copyright holders?>|<name of author>|"
    r"your_name_here|current_year_here"
)
_RIGHTS_RESERVED = re.compile(r"(?i)^\W*all rights reserved\W*$")
# More copyright lines than this in a package's own license file are notices of code it bundles: then only
# those in the file's first lines, where a package states its own, name its holder.
_MAX_HOLDER_LINES = 8
_HEAD_LINES = 15


def _is_license_file(name: str) -> bool:
    """LICENSE, LICENCE.md, COPYING, LICENSE-APACHE...; not a module that happens to be named license.py."""
    return bool(_LICENSE_FILE.match(name)) and not name.endswith(_NOT_LICENSE_FILE)


@functools.cache  # per distribution object: reading a RECORD of thousands of files takes a while
def _license_file_names(dist: Distribution) -> list[str]:
    """The license files in a distribution's metadata, relative to its license folder (or .dist-info)."""
    names = set(dist.metadata.get_all("License-File") or [])
    for path in dist.files or []:
        if len(path.parts) > 1 and path.parts[0].endswith(".dist-info"):
            in_folder = path.parts[1] in _LICENSE_FOLDERS
            if in_folder or (len(path.parts) == 2 and _is_license_file(path.name)):
                names.add("/".join(path.parts[2:] if in_folder else path.parts[1:]))
    return sorted(names)


def _main_license_files(dist: Distribution) -> list[str]:
    """The package's own license files: LICENSE* and COPYING* at the top, not bundled code's nor AUTHORS."""
    return [n for n in _license_file_names(dist) if "/" not in n and _is_license_file(n)]


def bundles_others(dist: Distribution) -> bool:
    """Whether a distribution ships licenses of code it bundles: nested license files, or a long notice."""
    nested = any("/" in n for n in _license_file_names(dist))
    packaged = any(
        _is_license_file(p.name) and not p.parts[0].endswith(".dist-info") for p in dist.files or []
    )
    texts = (read_license_file(dist, file) or "" for file in _main_license_files(dist))
    return nested or packaged or sum(len(copyright_lines(t)) for t in texts) > _MAX_HOLDER_LINES


def read_license_file(dist: Distribution, name: str) -> str | None:
    """A license file's text, wherever the metadata version (or the build backend) puts it."""
    places = (*(f"{folder}/{name}" for folder in _LICENSE_FOLDERS), name)
    return next((text for text in map(dist.read_text, places) if text is not None), None)


def _clean(line: str) -> str:
    """A copyright line without its comment or Markdown decoration and with single spaces."""
    return " ".join(line.strip().lstrip("*#> ").rstrip("*").split())


def _is_copyright(line: str) -> bool:
    """Whether a line states someone's copyright (a template's blank one does not)."""
    return bool(_COPYRIGHT.match(line)) and not _TEMPLATE.search(line)


def copyright_lines(text: str, head: int | None = None) -> list[str]:
    """The copyright statements in a license text (in its first `head` lines), in order, once each."""
    lines = text.splitlines()[:head]
    return list(dict.fromkeys(_clean(line) for line in lines if _is_copyright(line)))


def without_copyright(text: str) -> str:
    """A license text with its copyright lines (and their "All rights reserved.") removed, to be shared."""
    kept: list[str] = []
    after_copyright = False
    for line in text.splitlines():
        dropped = _is_copyright(line) or bool(after_copyright and _RIGHTS_RESERVED.match(line))
        after_copyright = dropped
        if not dropped:
            kept.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")


def _authors(dist: Distribution) -> str | None:
    """The authors (else maintainers) the metadata names, as names where it gives them."""
    for person, address in (("Author", "Author-email"), ("Maintainer", "Maintainer-email")):
        if named := _field(dist, person):
            return named
        if emails := _field(dist, address):
            return ", ".join(n or a for n, a in email.utils.getaddresses([emails]))
    return None


def holders_of(name: str, dist: Distribution) -> tuple[str, ...]:
    """Who holds the copyright: the override, the license file's copyright lines, else the authors."""
    if (override := OVERRIDES.get(name)) and override.holder:
        return (override.holder,)
    texts = [read_license_file(dist, file) or "" for file in _main_license_files(dist)]
    lines = list(dict.fromkeys(line for text in texts for line in copyright_lines(text)))
    if len(lines) > _MAX_HOLDER_LINES:
        lines = list(dict.fromkeys(line for text in texts for line in copyright_lines(text, _HEAD_LINES)))
    if lines:
        return tuple(lines)
    authors = _authors(dist)
    return (f"{authors} (authors, per the package metadata)",) if authors else ()


# ---------------------------------------------------------------------------------------------------------
# Sources

_SOURCE_LABELS = ("source", "sourcecode", "repository", "code", "github", "homepage", "home")


def source_of(name: str, dist: Distribution) -> str:
    """Where the code lives: a Project-URL (source first, then homepage), else Home-page, else PyPI."""
    if (override := OVERRIDES.get(name)) and override.source:
        return override.source
    urls: dict[str, str] = {}
    for entry in dist.metadata.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        urls.setdefault(re.sub(r"[^a-z]", "", label.lower()), url.strip())
    labelled = next((urls[label] for label in _SOURCE_LABELS if urls.get(label)), None)
    return labelled or _field(dist, "Home-page") or f"https://pypi.org/project/{name}/"


# ---------------------------------------------------------------------------------------------------------
# Entries and license texts


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
        "no usable license metadata; read its license file and add it to OVERRIDES in tools/notices.py",
    )
    _require(
        [e.name for e in listed if not e.holders],
        "no copyright line and no author; add its holder to OVERRIDES in tools/notices.py",
    )
    return listed


def _require(names: Sequence[str], problem: str) -> None:
    """Fail naming every distribution with the problem, so one run lists all the reviewing to do."""
    if names:
        raise NoticesError(f"{', '.join(names)}: {problem}")


def _from_source(license_: str, source: TextSource) -> LicenseText:
    """A license text read from the hand-reviewed file TEXT_SOURCES names."""
    dist = _installed(canonicalize_name(source.dist), "TEXT_SOURCES in tools/notices.py")
    text = read_license_file(dist, source.path) or ""
    start = text.find(source.start) if source.start is not None else 0
    end = text.find(source.end, max(start, 0)) if source.end is not None else len(text)
    if not text or start < 0 or end < 0:
        raise NoticesError(
            f"{license_}: {source.dist} {dist.version} has no license file {source.path} holding "
            f"{source.start!r}...{source.end!r}; review its TEXT_SOURCES entry in tools/notices.py"
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
        files = _main_license_files(dists[entry.name])
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
            "add the file that holds it to TEXT_SOURCES in tools/notices.py"
        )
    counts = Counter(" ".join(t.text.split()) for t in texts)
    return min(texts, key=lambda t: (-counts[" ".join(t.text.split())], len(t.text), t.origin))


# ---------------------------------------------------------------------------------------------------------
# The file


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
    return _LICENSE_TOKEN.sub(
        lambda m: m[0] if m[0] in _OPERATORS else f"[{m[0]}](#license-{anchors[m[0]]})", expression
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
            "Generated by `python tools/notices.py` from the installed packages' metadata, "
            "then reviewed by hand;",
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


# ---------------------------------------------------------------------------------------------------------
# Command line


# A package's row: its normalized name, then its version (PEP 440: a digit first; the header has none).
_ROW = re.compile(r"^\| ([a-z0-9][a-z0-9.-]*) \| ([0-9][^|\s]*) \|", re.MULTILINE)


def listed_versions(notices: str) -> dict[str, str]:
    """The packages a notices file lists in its table, with their versions."""
    return dict(_ROW.findall(notices))


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
    """Print the notices, or with --check compare them with the committed file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1, naming what differs, if FILE is stale")
    parser.add_argument(
        "--file", type=Path, default=NOTICES, help="the notices --check compares (%(default)s)"
    )
    args = parser.parse_args(argv)
    try:
        generated = render(closures())
    except NoticesError as error:
        print(f"notices: {error}", file=sys.stderr)
        return 2
    if not args.check:
        # UTF-8 whatever the locale: holders' names are not ASCII.
        sys.stdout.buffer.write(generated.encode("utf-8"))
        return 0
    committed = args.file.read_text(encoding="utf-8") if args.file.exists() else ""
    problem = stale(committed, generated, args.file.name)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
