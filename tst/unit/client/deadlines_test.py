"""The clients' deadline defaults are defined once: the trainer's `AgentEnv` and eval's `PlaySettings`
give a reset and a tool call the same time unless told otherwise."""

from __future__ import annotations

import inspect

import pytest

from agent_env.client._deadlines import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_RESET_TIMEOUT_S,
    DEFAULT_TOOL_TIMEOUT_S,
)

pytestmark = pytest.mark.needs("trl_installed")


def test_the_trainer_and_eval_default_to_the_same_reset_and_tool_deadlines() -> None:
    from agent_env.eval import PlaySettings
    from agent_env.training.trl import AgentEnv

    trainer = inspect.signature(AgentEnv).parameters

    assert (trainer["reset_timeout_s"].default, trainer["tool_timeout_s"].default) == (
        DEFAULT_RESET_TIMEOUT_S,
        DEFAULT_TOOL_TIMEOUT_S,
    )
    assert (PlaySettings().reset_timeout_s, PlaySettings().tool_timeout_s) == (
        DEFAULT_RESET_TIMEOUT_S,
        DEFAULT_TOOL_TIMEOUT_S,
    )


def test_the_trainer_its_classes_and_eval_default_to_the_same_connect_deadline() -> None:
    from agent_env.eval import PlaySettings
    from agent_env.training.trl import AgentEnv, ToolsetSettings

    assert inspect.signature(AgentEnv).parameters["connect_timeout_s"].default == DEFAULT_CONNECT_TIMEOUT_S
    assert (
        inspect.signature(ToolsetSettings).parameters["connect_timeout_s"].default
        == DEFAULT_CONNECT_TIMEOUT_S
    )
    assert PlaySettings().connect_timeout_s == DEFAULT_CONNECT_TIMEOUT_S
