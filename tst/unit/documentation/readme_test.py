"""The README is the five-minute front page: short, the two set-up commands first, and every link it
gives reaching a file of the repository and, where it names one, a heading of that file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
SETUP = (
    "make install demo    # the main job",
    "make install docker-engine chromium test reliability trl-test   # install, start a loopback-only",
)
LINK = re.compile(r"\]\(([^)\s#]+)(?:#([^)\s]+))?\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub (and the site's toc) gives a heading."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"\s", "-", text)


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return {github_anchor(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


def test_the_readme_is_at_most_250_lines_and_opens_with_the_two_set_up_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    first_block = lines[lines.index("```bash") + 1 : lines.index("```bash") + 3]

    assert len(lines) <= 250
    assert [line[: len(start)] for line, start in zip(first_block, SETUP, strict=True)] == list(SETUP)


def test_every_link_of_the_readme_reaches_a_file_and_each_anchor_a_heading_of_it():
    broken = []
    for target, anchor in LINK.findall(README.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://")):
            continue
        path = ROOT / target
        if not path.exists():
            broken.append(target)
        elif anchor and anchor not in anchors(path):
            broken.append(f"{target}#{anchor}")

    assert broken == []
