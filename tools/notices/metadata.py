"""What a distribution's metadata says of it: license, license texts, copyright holders, source.

Where the metadata is ambiguous, silent or wrong, a hand-reviewed table answers instead.
"""

from __future__ import annotations

import email.utils
import functools
import re
from dataclasses import dataclass

from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression

from tools.notices.closure import Distribution


@dataclass(frozen=True)
class Override:
    """What a distribution's metadata cannot say: its license as SPDX, its copyright holder, its source."""

    why: str
    license: str | None = None
    holder: str | None = None
    source: str | None = None
    note: str | None = None


# Reviewed by hand against each distribution's installed license file and metadata (versions as of the last
# review: google-re2 1.1.20251105, groovy 0.1.2, jinja2 3.1.6, lazy-importer 0.1.0, orjson 3.13.0, pyperclip
# 1.11.0, python-dateutil 4.0.0, safehttpx 0.1.7, semantic-version 2.10.0, tqdm 4.70.1, typing-extensions
# 4.16.0). A `note` is printed under the table, for a reader to see what was decided.
_SHIPS_APACHE = (
    "its metadata says MIT (a classifier), but the only license text it ships is Apache-2.0's (unfilled); "
    "listed under the terms it ships"
)
_RE2_LINKS_ABSEIL = (
    "its license file is RE2's (three-clause BSD, The RE2 Authors); its wheel's extension module also "
    "links Abseil (Apache-2.0, The Abseil Authors) statically, so both licenses apply to what is installed"
)
OVERRIDES: dict[str, Override] = {
    "google-re2": Override(
        "its only license metadata is the classifier 'BSD License'; " + _RE2_LINKS_ABSEIL,
        license="BSD-3-Clause AND Apache-2.0",
        holder="Copyright (c) 2009 The RE2 Authors; The Abseil Authors (Abseil, linked into its extension "
        "module)",
        note=_RE2_LINKS_ABSEIL,
    ),
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
    "orjson": Override(
        "3.13 names no author and its three license files (Apache-2.0, MIT, MPL-2.0) no holder; the "
        "package is ijl's, as its source URL and its earlier releases' author field say",
        holder="ijl <ijl@mailbox.org> and the orjson contributors (the package itself names no holder)",
    ),
    "pyperclip": Override(
        "License says 'BSD'; LICENSE.txt has the three clauses ('Neither the name of ...')",
        license="BSD-3-Clause",
    ),
    "python-dateutil": Override(
        "2.9 said 'Dual License' and 4.0 says BSD-3-Clause, but LICENSE is the same in both: contributions "
        "since 2017-12-01 are Apache-2.0, and the BSD-3-Clause text applies to all code",
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
OPERATORS = frozenset({"AND", "OR", "WITH"})
LICENSE_TOKEN = re.compile(r"[A-Za-z0-9.+-]+")


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
    return [t for t in LICENSE_TOKEN.findall(expression) if t not in OPERATORS]


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


def main_license_files(dist: Distribution) -> list[str]:
    """The package's own license files: LICENSE* and COPYING* at the top, not bundled code's nor AUTHORS."""
    return [n for n in _license_file_names(dist) if "/" not in n and _is_license_file(n)]


def bundles_others(dist: Distribution) -> bool:
    """Whether a distribution ships licenses of code it bundles: nested license files, or a long notice."""
    nested = any("/" in n for n in _license_file_names(dist))
    packaged = any(
        _is_license_file(p.name) and not p.parts[0].endswith(".dist-info") for p in dist.files or []
    )
    texts = (read_license_file(dist, file) or "" for file in main_license_files(dist))
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
    texts = [read_license_file(dist, file) or "" for file in main_license_files(dist)]
    lines = list(dict.fromkeys(line for text in texts for line in copyright_lines(text)))
    if len(lines) > _MAX_HOLDER_LINES:
        lines = list(dict.fromkeys(line for text in texts for line in copyright_lines(text, _HEAD_LINES)))
    if lines:
        return tuple(lines)
    authors = _authors(dist)
    return (f"{authors} (authors, per the package metadata)",) if authors else ()


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
