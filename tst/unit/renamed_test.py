"""Renamed public names (`agent_env._renamed`): the old name still answers for a while, with a
DeprecationWarning that says what to import instead, and is no longer listed."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("agent_env", "play", "replay"),
        ("agent_env", "PlayResult", "ReplayResult"),
        ("agent_env", "TurnEnd", "TurnResult"),
        ("agent_env", "serve_bundle", "served_tasks"),
        ("agent_env", "Served", "ServedTasks"),
        ("agent_env.replay", "play", "replay"),
        ("agent_env.episode", "TurnEnd", "TurnResult"),
        ("agent_env.served", "serve_bundle", "served_tasks"),
        ("agent_env", "Script", "Solution"),
        ("agent_env.specs", "Script", "Solution"),
        ("agent_env", "Outcome", "EpisodeOutcome"),
        ("agent_env.events", "Outcome", "EpisodeOutcome"),
    ],
)
def test_a_renamed_name_still_answers_under_its_old_one_with_a_warning_naming_the_new(
    module: str, old: str, new: str
) -> None:
    imported = importlib.import_module(module)

    with pytest.warns(DeprecationWarning, match=f"{module}.{old} is renamed {new}: import {new} instead"):
        found = getattr(imported, old)

    assert found is getattr(imported, new)
    assert old not in getattr(imported, "__all__", [])
