"""Kept verdicts: the most recent in memory, bounded; every one in a folder, read back by another
process's cache; a file that is not a verdict is a miss, and a folder that cannot be written keeps
the verdict in memory alone."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent_env.judges._cache import VerdictCache
from agent_env.judges._verdict import Verdict

KEY = "ab" + "0" * 62


def test_memory_keeps_the_most_recently_used_verdicts_up_to_its_bound():
    cache = VerdictCache(max_entries=2)
    cache.remember("a", [Verdict(1, "a")])
    cache.remember("b", [Verdict(2, "b")])
    cache.remembered("a")  # now the most recent
    cache.remember("c", [Verdict(3, "c")])

    assert cache.remembered("b") is None
    assert cache.remembered("a") == [Verdict(1, "a")] and cache.remembered("c") == [Verdict(3, "c")]


def test_a_verdict_written_to_the_folder_is_read_back_by_another_cache(tmp_path: Path):
    VerdictCache(tmp_path).write(KEY, [Verdict(7, "Polite.")])

    assert VerdictCache(tmp_path).read(KEY) == [Verdict(7, "Polite.")]
    assert (tmp_path / "ab" / f"{KEY}.json").is_file()
    assert [p.name for p in (tmp_path / "ab").iterdir()] == [f"{KEY}.json"]  # nothing left aside


def test_a_group_s_verdicts_are_kept_together_in_their_order(tmp_path: Path):
    group = [Verdict(9, "Best of the group."), Verdict(2, "Curt."), Verdict(5, "Plain.")]
    VerdictCache(tmp_path).write(KEY, group)

    assert VerdictCache(tmp_path).read(KEY) == group


def test_without_a_folder_nothing_is_read_or_written(tmp_path: Path):
    cache = VerdictCache()
    cache.write(KEY, [Verdict(7, "x")])

    assert cache.read(KEY) is None


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        '{"verdicts": [{"score": "7", "reason": "x"}]}',
        '{"verdicts": [{"reason": "x"}]}',
        '{"verdicts": []}',
        '{"score": 7, "reason": "x"}',
    ],
)
def test_a_file_that_is_not_a_verdict_is_a_miss_and_logged(
    tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture
):
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / f"{KEY}.json").write_text(content)

    with caplog.at_level(logging.WARNING, logger="agent_env.judges"):
        assert VerdictCache(tmp_path).read(KEY) is None
    assert "does not read as a verdict" in caplog.text


def test_a_folder_that_cannot_be_written_keeps_the_verdict_in_memory_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")

    with caplog.at_level(logging.WARNING, logger="agent_env.judges"):
        VerdictCache(blocked).write(KEY, [Verdict(7, "x")])
    assert "cannot write" in caplog.text
