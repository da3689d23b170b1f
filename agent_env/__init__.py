"""agentenv-framework: bundles of tool-using agent tasks as RL environments.

The core (this package) knows nothing of OpenEnv or TRL: the server is `agent_env.openenv`, the
trainer's side `agent_env.training.trl`, each behind its own extra. Every name below loads with its
module when first used (`_lazy`), so a trainer that imports `agent_env.specs` loads no engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_env._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from agent_env.bundle import Bundle, load_bundle
    from agent_env.env import Env, EnvSpec
    from agent_env.episode import Episode, EpisodeAPI, EpisodeState, TurnEnd
    from agent_env.errors import (
        BundleError,
        EpisodeError,
        Problem,
        SandboxUnavailableError,
        ToolDefinitionError,
    )
    from agent_env.replay import PlayResult, Script, ScriptedCall, ScriptedTurn, load_solutions, play
    from agent_env.sandbox import (
        CommandResult,
        DockerSandboxProvider,
        LocalSandboxProvider,
        Sandbox,
        SandboxConfig,
        SandboxProvider,
        build_sandbox_image,
        sandbox_provider,
    )
    from agent_env.served import Served, ServedTask, serve_bundle
    from agent_env.specs import AccessChange, TaskSpec, ToolsetSpec
    from agent_env.task import Agent, Task
    from agent_env.tools import Tool, tool
    from agent_env.toolset import BASH_TOOL, Toolset, toolset_name
    from agent_env.verifiers import VerifierContext
else:
    lazy_exports(
        __name__,
        {
            "agent_env.bundle": ["Bundle", "load_bundle"],
            "agent_env.env": ["Env", "EnvSpec"],
            "agent_env.episode": ["Episode", "EpisodeAPI", "EpisodeState", "TurnEnd"],
            "agent_env.errors": [
                "BundleError",
                "EpisodeError",
                "Problem",
                "SandboxUnavailableError",
                "ToolDefinitionError",
            ],
            "agent_env.replay": [
                "PlayResult",
                "Script",
                "ScriptedCall",
                "ScriptedTurn",
                "load_solutions",
                "play",
            ],
            "agent_env.sandbox": [
                "CommandResult",
                "DockerSandboxProvider",
                "LocalSandboxProvider",
                "Sandbox",
                "SandboxConfig",
                "SandboxProvider",
                "build_sandbox_image",
                "sandbox_provider",
            ],
            "agent_env.served": ["Served", "ServedTask", "serve_bundle"],
            "agent_env.specs": ["AccessChange", "TaskSpec", "ToolsetSpec"],
            "agent_env.task": ["Agent", "Task"],
            "agent_env.tools": ["Tool", "tool"],
            "agent_env.toolset": ["BASH_TOOL", "Toolset", "toolset_name"],
            "agent_env.verifiers": ["VerifierContext"],
        },
    )

__all__ = [
    "BASH_TOOL",
    "AccessChange",
    "Agent",
    "Bundle",
    "BundleError",
    "CommandResult",
    "DockerSandboxProvider",
    "Env",
    "EnvSpec",
    "Episode",
    "EpisodeAPI",
    "EpisodeError",
    "EpisodeState",
    "LocalSandboxProvider",
    "PlayResult",
    "Problem",
    "Sandbox",
    "SandboxConfig",
    "SandboxProvider",
    "SandboxUnavailableError",
    "Script",
    "ScriptedCall",
    "ScriptedTurn",
    "Served",
    "ServedTask",
    "Task",
    "TaskSpec",
    "Tool",
    "ToolDefinitionError",
    "Toolset",
    "ToolsetSpec",
    "TurnEnd",
    "VerifierContext",
    "__version__",
    "build_sandbox_image",
    "load_bundle",
    "load_solutions",
    "play",
    "sandbox_provider",
    "serve_bundle",
    "tool",
    "toolset_name",
]
