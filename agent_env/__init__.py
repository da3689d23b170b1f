"""agentenv-framework: bundles of tool-using agent tasks as RL environments.

The core (this package) knows nothing of OpenEnv or TRL: the server is `agent_env.openenv`, the
trainer's side `agent_env.training.trl`, each behind its own extra. Every name below loads with its
module when first used (`_lazy`), so a trainer that imports `agent_env.specs` loads no engine.
"""

from __future__ import annotations

import typing as _typing

from agent_env._lazy import lazy_exports as _lazy_exports

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:
    from agent_env.bundle import Bundle, load_bundle
    from agent_env.contexts import VerifierContext
    from agent_env.env import Env, EnvSpec
    from agent_env.episode import Episode, EpisodeState, TurnEnd
    from agent_env.errors import (
        AgentEnvError,
        BundleError,
        EpisodeError,
        ErrorCode,
        Problem,
        SandboxUnavailableError,
        SplitNotFoundError,
        TaskIndexError,
        ToolDefinitionError,
    )
    from agent_env.events import (
        Deployed,
        EpisodeEvent,
        Failed,
        Listener,
        Outcome,
        Scored,
        ToolAnswered,
        ToolCalled,
        TornDown,
        TurnEnded,
    )
    from agent_env.mcp import McpEnv, McpEnvSpec, McpServerConfig, McpTool, McpToolError
    from agent_env.recording import Redaction, TrajectoryRecorder, read_trajectories, trajectory_of
    from agent_env.replay import PlayResult, load_solutions, play
    from agent_env.sandbox import (
        CommandResult,
        DockerSandboxProvider,
        LocalSandboxProvider,
        Sandbox,
        SandboxConfig,
        SandboxProvider,
        WarmPool,
        build_sandbox_image,
        sandbox_provider,
    )
    from agent_env.served import Served, ServedTask, serve_bundle
    from agent_env.specs import (
        AccessChange,
        Script,
        ScriptedCall,
        ScriptedTurn,
        SolutionSpec,
        TaskSpec,
        ToolsetSpec,
        VerifierSummary,
        tasks_fingerprint,
    )
    from agent_env.task import Agent, Task
    from agent_env.tools import Tool, tool
    from agent_env.toolset import BASH_TOOL, Toolset, toolset_name
    from agent_env.trajectory import (
        OutcomeRecord,
        TaskRef,
        Timings,
        ToolCallRecord,
        Trajectory,
        TurnRecord,
        VerifierRecord,
    )
    from agent_env.users import SimulatedUser, UserContext
else:
    _lazy_exports(
        __name__,
        {
            "agent_env.bundle": ["Bundle", "load_bundle"],
            "agent_env.contexts": ["VerifierContext"],
            "agent_env.env": ["Env", "EnvSpec"],
            "agent_env.episode": ["Episode", "EpisodeState", "TurnEnd"],
            "agent_env.errors": [
                "AgentEnvError",
                "BundleError",
                "EpisodeError",
                "ErrorCode",
                "Problem",
                "SandboxUnavailableError",
                "SplitNotFoundError",
                "TaskIndexError",
                "ToolDefinitionError",
            ],
            "agent_env.events": [
                "Deployed",
                "EpisodeEvent",
                "Failed",
                "Listener",
                "Outcome",
                "Scored",
                "ToolAnswered",
                "ToolCalled",
                "TornDown",
                "TurnEnded",
            ],
            "agent_env.mcp": ["McpEnv", "McpEnvSpec", "McpServerConfig", "McpTool", "McpToolError"],
            "agent_env.recording": ["Redaction", "TrajectoryRecorder", "read_trajectories", "trajectory_of"],
            "agent_env.replay": ["PlayResult", "load_solutions", "play"],
            "agent_env.sandbox": [
                "CommandResult",
                "DockerSandboxProvider",
                "LocalSandboxProvider",
                "Sandbox",
                "SandboxConfig",
                "SandboxProvider",
                "WarmPool",
                "build_sandbox_image",
                "sandbox_provider",
            ],
            "agent_env.served": ["Served", "ServedTask", "serve_bundle"],
            "agent_env.specs": [
                "AccessChange",
                "Script",
                "ScriptedCall",
                "ScriptedTurn",
                "SolutionSpec",
                "TaskSpec",
                "ToolsetSpec",
                "VerifierSummary",
                "tasks_fingerprint",
            ],
            "agent_env.task": ["Agent", "Task"],
            "agent_env.tools": ["Tool", "tool"],
            "agent_env.toolset": ["BASH_TOOL", "Toolset", "toolset_name"],
            "agent_env.trajectory": [
                "OutcomeRecord",
                "TaskRef",
                "Timings",
                "ToolCallRecord",
                "Trajectory",
                "TurnRecord",
                "VerifierRecord",
            ],
            "agent_env.users": ["SimulatedUser", "UserContext"],
        },
    )

__all__ = [
    "BASH_TOOL",
    "AccessChange",
    "Agent",
    "AgentEnvError",
    "Bundle",
    "BundleError",
    "CommandResult",
    "Deployed",
    "DockerSandboxProvider",
    "Env",
    "EnvSpec",
    "Episode",
    "EpisodeError",
    "EpisodeEvent",
    "EpisodeState",
    "ErrorCode",
    "Failed",
    "Listener",
    "LocalSandboxProvider",
    "McpEnv",
    "McpEnvSpec",
    "McpServerConfig",
    "McpTool",
    "McpToolError",
    "Outcome",
    "OutcomeRecord",
    "PlayResult",
    "Problem",
    "Redaction",
    "Sandbox",
    "SandboxConfig",
    "SandboxProvider",
    "SandboxUnavailableError",
    "Scored",
    "Script",
    "ScriptedCall",
    "ScriptedTurn",
    "Served",
    "ServedTask",
    "SimulatedUser",
    "SolutionSpec",
    "SplitNotFoundError",
    "Task",
    "TaskIndexError",
    "TaskRef",
    "TaskSpec",
    "Timings",
    "Tool",
    "ToolAnswered",
    "ToolCallRecord",
    "ToolCalled",
    "ToolDefinitionError",
    "Toolset",
    "ToolsetSpec",
    "TornDown",
    "Trajectory",
    "TrajectoryRecorder",
    "TurnEnd",
    "TurnEnded",
    "TurnRecord",
    "UserContext",
    "VerifierContext",
    "VerifierRecord",
    "VerifierSummary",
    "WarmPool",
    "__version__",
    "build_sandbox_image",
    "load_bundle",
    "load_solutions",
    "play",
    "read_trajectories",
    "sandbox_provider",
    "serve_bundle",
    "tasks_fingerprint",
    "tool",
    "toolset_name",
    "trajectory_of",
]
