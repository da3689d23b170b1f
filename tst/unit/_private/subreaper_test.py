"""The launcher's search for what a command left behind, against the one race /proc reads have: a
process whose parent exits during the search is handed to the launcher after the launcher's children
were read, and is no longer under its parent when that is read."""

from __future__ import annotations

import pytest

from agent_env import _subreaper

LAUNCHER, SHELL, SUBSHELL, LEFT = 10, 11, 12, 13


def test_a_process_handed_to_the_launcher_while_its_parent_s_children_are_read_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tree = {LAUNCHER: [SHELL], SHELL: [SUBSHELL], SUBSHELL: [LEFT], LEFT: []}

    def children(pid: int) -> list[int]:
        if pid == SUBSHELL:  # it exits as it is read: its child goes to the launcher, it stays a zombie
            tree[LAUNCHER].append(LEFT)
            tree[SUBSHELL] = []
        return list(tree[pid])

    monkeypatch.setattr(_subreaper, "children", children)
    monkeypatch.setattr(_subreaper, "_alive", lambda pid: pid != SUBSHELL)

    assert _subreaper.leftovers(LAUNCHER) == [LEFT]


def test_a_command_that_left_nothing_has_no_leftovers(monkeypatch: pytest.MonkeyPatch) -> None:
    tree = {LAUNCHER: [SHELL], SHELL: []}
    monkeypatch.setattr(_subreaper, "children", lambda pid: list(tree[pid]))
    monkeypatch.setattr(_subreaper, "_alive", lambda pid: True)

    assert _subreaper.leftovers(LAUNCHER) == []
