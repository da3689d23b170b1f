"""agentenv-framework: bundles of tool-using agent tasks as RL environments.

The core (this package) knows nothing of OpenEnv or TRL: the server is `agent_env.openenv`, the
trainer's side `agent_env.training.trl`, each behind its own extra. Every name below loads with its
module when first used (`_lazy`), so a trainer that imports `agent_env._specs` loads no engine.
"""

from __future__ import annotations

import typing as _typing

from agent_env._lazy import lazy_exports as _lazy_exports

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:
    from agent_env._atif import AtifExport as AtifExport, export_atif as export_atif, to_atif as to_atif
    from agent_env._bundle.reader import Bundle as Bundle
    from agent_env._contexts import UserContext as UserContext, VerifierContext as VerifierContext
    from agent_env._curriculum import (
        Curriculum as Curriculum,
        CurriculumPolicy as CurriculumPolicy,
        TaskRecord as TaskRecord,
    )
    from agent_env._env import Env as Env, EnvDefinition as EnvDefinition
    from agent_env._episode import Episode as Episode, EpisodeState as EpisodeState, TurnResult as TurnResult
    from agent_env._episode_trajectory import trajectory_of as trajectory_of
    from agent_env._error_types import (
        AgentEnvError as AgentEnvError,
        ArgumentError as ArgumentError,
        ArgumentTypeError as ArgumentTypeError,
        BundleError as BundleError,
        EpisodeError as EpisodeError,
        ErrorCode as ErrorCode,
        Problem as Problem,
        SandboxUnavailableError as SandboxUnavailableError,
        SkippedTask as SkippedTask,
        SplitNotFoundError as SplitNotFoundError,
        StateError as StateError,
        TaskIndexError as TaskIndexError,
        ToolDefinitionError as ToolDefinitionError,
    )
    from agent_env._events import (
        Deployed as Deployed,
        EpisodeEvent as EpisodeEvent,
        EpisodeOutcome as EpisodeOutcome,
        Failed as Failed,
        Listener as Listener,
        Scored as Scored,
        ToolAnswered as ToolAnswered,
        ToolCalled as ToolCalled,
        TornDown as TornDown,
        TurnEnded as TurnEnded,
    )
    from agent_env._loading import load_bundle as load_bundle
    from agent_env._replay import (
        ReplayResult as ReplayResult,
        load_solutions as load_solutions,
        replay as replay,
        replay_many as replay_many,
    )
    from agent_env._served import (
        ServedTask as ServedTask,
        ServedTasks as ServedTasks,
        served_tasks as served_tasks,
    )
    from agent_env._specs import (
        AccessChange as AccessChange,
        CurriculumDraw as CurriculumDraw,
        CurriculumDrawn as CurriculumDrawn,
        CurriculumScore as CurriculumScore,
        ScriptedCall as ScriptedCall,
        ScriptedTurn as ScriptedTurn,
        Solution as Solution,
        SolutionSpec as SolutionSpec,
        TaskSpec as TaskSpec,
        ToolsetSpec as ToolsetSpec,
        VerifierSummary as VerifierSummary,
        tasks_fingerprint as tasks_fingerprint,
    )
    from agent_env._task import Agent as Agent, Task as Task
    from agent_env._tools import Tool as Tool, tool as tool
    from agent_env._toolset import BASH_TOOL as BASH_TOOL, Toolset as Toolset, toolset_name as toolset_name
    from agent_env._trajectory import (
        OutcomeRecord as OutcomeRecord,
        TaskRef as TaskRef,
        Timings as Timings,
        ToolCallRecord as ToolCallRecord,
        Trajectory as Trajectory,
        TurnRecord as TurnRecord,
        VerifierRecord as VerifierRecord,
    )
    from agent_env._trajectory_reader import read_trajectories as read_trajectories
    from agent_env._trajectory_recorder import (
        Redaction as Redaction,
        TrajectoryRecorder as TrajectoryRecorder,
    )
    from agent_env.harbor import (
        HarborTasks as HarborTasks,
        harbor_folder as harbor_folder,
        read_harbor as read_harbor,
    )
    from agent_env.mcp import (
        McpEnv as McpEnv,
        McpEnvDefinition as McpEnvDefinition,
        McpServerConfig as McpServerConfig,
        McpTool as McpTool,
        McpToolError as McpToolError,
    )
    from agent_env.sandbox import (
        CommandResult as CommandResult,
        DockerSandboxProvider as DockerSandboxProvider,
        LocalSandboxProvider as LocalSandboxProvider,
        Sandbox as Sandbox,
        SandboxConfig as SandboxConfig,
        SandboxesByTask as SandboxesByTask,
        SandboxProvider as SandboxProvider,
        WarmPool as WarmPool,
        build_sandbox_image as build_sandbox_image,
        sandbox_provider as sandbox_provider,
    )
    from agent_env.users import SimulatedUser as SimulatedUser
else:
    _lazy_exports(
        __name__,
        {
            "agent_env._atif": ["AtifExport", "export_atif", "to_atif"],
            "agent_env._bundle.reader": ["Bundle"],
            "agent_env._loading": ["load_bundle"],
            "agent_env._contexts": ["UserContext", "VerifierContext"],
            "agent_env._env": ["Env", "EnvDefinition"],
            "agent_env.harbor": ["HarborTasks", "harbor_folder", "read_harbor"],
            "agent_env._episode": ["Episode", "EpisodeState", "TurnResult"],
            "agent_env._episode_trajectory": ["trajectory_of"],
            "agent_env._error_types": [
                "AgentEnvError",
                "ArgumentError",
                "ArgumentTypeError",
                "BundleError",
                "EpisodeError",
                "ErrorCode",
                "Problem",
                "SandboxUnavailableError",
                "SkippedTask",
                "SplitNotFoundError",
                "StateError",
                "TaskIndexError",
                "ToolDefinitionError",
            ],
            "agent_env._events": [
                "Deployed",
                "EpisodeEvent",
                "EpisodeOutcome",
                "Failed",
                "Listener",
                "Scored",
                "ToolAnswered",
                "ToolCalled",
                "TornDown",
                "TurnEnded",
            ],
            "agent_env.mcp": ["McpEnv", "McpEnvDefinition", "McpServerConfig", "McpTool", "McpToolError"],
            "agent_env._replay": ["ReplayResult", "load_solutions", "replay", "replay_many"],
            "agent_env.sandbox": [
                "CommandResult",
                "DockerSandboxProvider",
                "LocalSandboxProvider",
                "Sandbox",
                "SandboxConfig",
                "SandboxProvider",
                "SandboxesByTask",
                "WarmPool",
                "build_sandbox_image",
                "sandbox_provider",
            ],
            "agent_env._served": ["ServedTasks", "ServedTask", "served_tasks"],
            "agent_env._curriculum": ["Curriculum", "CurriculumPolicy", "TaskRecord"],
            "agent_env._specs": [
                "AccessChange",
                "CurriculumDraw",
                "CurriculumDrawn",
                "CurriculumScore",
                "Solution",
                "ScriptedCall",
                "ScriptedTurn",
                "SolutionSpec",
                "TaskSpec",
                "ToolsetSpec",
                "VerifierSummary",
                "tasks_fingerprint",
            ],
            "agent_env._task": ["Agent", "Task"],
            "agent_env._tools": ["Tool", "tool"],
            "agent_env._toolset": ["BASH_TOOL", "Toolset", "toolset_name"],
            "agent_env._trajectory": [
                "OutcomeRecord",
                "TaskRef",
                "Timings",
                "ToolCallRecord",
                "Trajectory",
                "TurnRecord",
                "VerifierRecord",
            ],
            "agent_env._trajectory_reader": ["read_trajectories"],
            "agent_env._trajectory_recorder": ["Redaction", "TrajectoryRecorder"],
            "agent_env.users": ["SimulatedUser"],
        },
        eager=["__version__"],
    )
