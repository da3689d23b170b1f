"""THIRD_PARTY_NOTICES.md lists every distribution each install brings, at the version the lock pins,
and each license link lands on a text.

What each install brings is recomputed here from the installed metadata (`tools.notices.closures`),
which must be the locked set (requirements/dev.lock): `make install` installs exactly the lock on every
machine, so names and versions both hold wherever the tests run, and a release upstream changes nothing
until `make lock` takes it (and regenerates the notices with it). Every other byte is for
`python -m tools.notices --check`, whose behaviour on a stale file is tested here.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools import lockfile, notices
from tst.util import capabilities

NOTICES = notices.NOTICES
ANCHOR = re.compile(r'^<a id="(license-\d+)"></a>$', re.MULTILINE)
LINK = re.compile(r"\]\(#(license-\d+)\)")


@pytest.fixture(scope="module")
def closures() -> dict[str, dict[str, str]]:
    return {area: {n: d.version for n, d in dists.items()} for area, dists in notices.closures().items()}


@pytest.fixture(scope="module")
def committed() -> str:
    return NOTICES.read_text(encoding="utf-8")


def run_notices(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.notices", *args],
        cwd=notices.ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )


def table_rows(text: str) -> list[list[str]]:
    """The package table's rows as cells (a cell's own `|` is escaped)."""
    rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in text.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row] for row in rows[1:]]  # the header is the first


def license_sections(text: str) -> dict[str, str]:
    """Each anchor and the text from it to the next anchor."""
    starts = list(ANCHOR.finditer(text))
    ends = [m.start() for m in starts[1:]] + [len(text)]
    return {m[1]: text[m.end() : end] for m, end in zip(starts, ends, strict=True)}


@pytest.mark.needs(*capabilities.EVERY_EXTRA)
@pytest.mark.parametrize("area", list(notices.declared()))
def test_every_distribution_an_install_brings_is_listed_at_its_locked_version(area, closures, committed):
    listed = notices.listed_versions(committed)
    locked = lockfile.locked()

    assert {n: listed.get(n) for n in closures[area]} == {n: locked[n] for n in closures[area]}, (
        f"regenerate: {notices.REGENERATE}"
    )


@pytest.mark.needs(*capabilities.EVERY_EXTRA)
def test_the_notices_list_no_distribution_that_no_install_brings(closures, committed):
    brought = set().union(*closures.values())

    assert sorted(notices.listed_versions(committed).keys() - brought) == []


@pytest.mark.needs(*capabilities.EVERY_EXTRA)
def test_the_notices_refuse_installed_packages_that_are_not_the_locked_ones(tmp_path: Path):
    pydantic, parser = importlib.metadata.version("pydantic"), importlib.metadata.version("docstring-parser")
    lock = tmp_path / "dev.lock"
    lock.write_text(
        lockfile.LOCK.read_text(encoding="utf-8")
        .replace(f"\npydantic=={pydantic} ", "\npydantic==0.0.1 ")
        .replace(f"\ndocstring-parser=={parser} ", "\nnot-docstring-parser==1.0 "),
        encoding="utf-8",
    )

    with pytest.raises(notices.NoticesError) as refused:
        notices.closures(lock=lock)

    assert f"pydantic {pydantic} (locked: 0.0.1)" in str(refused.value)
    assert f"docstring-parser {parser} (not locked)" in str(refused.value)
    assert "run `make install`" in str(refused.value)


def test_the_notices_list_neither_the_package_itself_nor_trl_nor_torch(committed):
    listed = notices.listed_versions(committed)

    assert [name for name in ("agentenv-framework", "trl", "torch") if name in listed] == []
    assert "TRL and torch are the trainer's to install and pin" in committed


def test_every_listed_package_links_to_at_least_one_license_text(committed):
    unlicensed = [row[0] for row in table_rows(committed) if not LINK.search(row[2])]

    assert table_rows(committed)
    assert unlicensed == []


def test_every_license_link_in_the_notices_leads_to_an_anchor_in_the_file(committed):
    links = set(LINK.findall(committed))
    anchors = ANCHOR.findall(committed)

    assert links
    assert sorted(links - set(anchors)) == []
    assert len(anchors) == len(set(anchors))


def test_every_license_anchor_is_followed_by_a_non_empty_license_text(committed):
    sections = license_sections(committed)
    block = re.compile(r"^(`{3,})text\n(.*?)\n\1$", re.MULTILINE | re.DOTALL)
    texts = {anchor: block.search(section) for anchor, section in sections.items()}

    assert sections
    assert [anchor for anchor, text in texts.items() if text is None or not text[2].strip()] == []


@pytest.mark.needs(*capabilities.EVERY_EXTRA)
def test_check_passes_on_the_file_the_generator_writes(tmp_path: Path):
    written = tmp_path / "THIRD_PARTY_NOTICES.md"
    written.write_text(run_notices().stdout, encoding="utf-8")

    done = run_notices("--check", "--file", str(written))

    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.needs(*capabilities.EVERY_EXTRA)
def test_check_fails_naming_the_packages_that_differ_when_the_file_is_stale(tmp_path: Path, committed):
    (first, version), *_, (last, _) = notices.listed_versions(committed).items()
    stale = committed.replace(f"| {first} | {version} |", f"| {first} | 0.0.0.dev0 |")
    stale = re.sub(rf"^\| {re.escape(last)} \|.*\n", "", stale, flags=re.MULTILINE)
    (tmp_path / "stale.md").write_text(stale, encoding="utf-8")

    done = run_notices("--check", "--file", str(tmp_path / "stale.md"))

    assert done.returncode == 1
    assert f"version: {first} 0.0.0.dev0 -> " in done.stderr
    assert f"new: {last} " in done.stderr
    assert notices.REGENERATE in done.stderr
