"""TRL's `environment_factory`: one generated class per toolset of the factory's split, each built from
the tools its listing names (`_toolsets.py`) and the deadlines the AgentEnv was given; with one toolset
the factory is that class, with several a dict toolset name -> class (every dataset row then names
its class in TRL's `environment` column)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from agent_env._errors import ArgumentError
from agent_env._names import TRAINER_METHODS
from agent_env._specs import TaskSpec
from agent_env.client._deadlines import Deadlines
from agent_env.training.trl._classes import ToolsetSettings, check_rendering, environment_class
from agent_env.training.trl._fleet import FleetSettings
from agent_env.training.trl._toolsets import Listing

Factory = type | dict[str, type]


def toolset_settings(
    listing: Listing,
    *,
    key: str,
    fleet: FleetSettings,
    toolset: str,
    reset_timeout_s: float,
    tool_timeout_s: float,
    tool_timeouts: Mapping[str, float],
    connect_timeout_s: float,
    label: str | None,
) -> ToolsetSettings:
    """What a toolset's generated class is made from: its tools and the deadlines of its calls."""
    return ToolsetSettings(
        key=key,
        fleet=fleet,
        toolset=toolset,
        tools=tuple(json.dumps(tool) for tool in listing.tools),
        deadlines=Deadlines(
            reset_timeout_s,
            tool_timeout_s,
            tuple(sorted(tool_timeouts.items())),
            tuple(sorted(listing.tool_timeouts.items())),
        ),
        connect_timeout_s=connect_timeout_s,
        label=label,
    )


def factory_of(
    toolsets: Mapping[str, TaskSpec],
    settings_of: Callable[[str, TaskSpec], ToolsetSettings],
    *,
    split: str,
    tool_timeouts: Mapping[str, float],
) -> Factory:
    """A class per toolset (each with the first task that uses it), checked as TRL renders it; a name of
    `tool_timeouts` that no toolset's tool has is refused."""
    classes: dict[str, type] = {}
    for name, task in toolsets.items():
        made = environment_class(settings_of(name, task))
        check_rendering(made)
        classes[name] = made
    tools = {tool for made in classes.values() for tool in dir(made) if not tool.startswith("_")}
    if stray := sorted(set(tool_timeouts) - tools):
        raise ArgumentError(
            f"tool_timeouts names tools no toolset of split '{split}' has: {', '.join(stray)} "
            f"(tools: {', '.join(sorted(tools - TRAINER_METHODS))})"
        )
    return next(iter(classes.values())) if len(classes) == 1 else classes
