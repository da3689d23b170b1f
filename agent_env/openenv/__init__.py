"""Serve a bundle over OpenEnv 0.10: the Task API, WebSocket sessions, deadlines, tracked teardown.

Behind the `openenv` extra. Importing this package only checks that OpenEnv 0.10 is installed: each
name below loads with its module when first used (`agent_env._lazy`), so the trainer's side imports
the wire contract (`wire`, `tokens`) without agent_env's server. OpenEnv itself takes seconds to
import (its server and gradio come with any part of it); the core never imports it.
"""

from __future__ import annotations

import typing as _typing

from agent_env._lazy import lazy_exports as _lazy_exports
from agent_env.openenv._require import require_openenv as _require_openenv

_require_openenv()

if _typing.TYPE_CHECKING:
    from agent_env.openenv.app import (
        DEFAULT_MAX_CONCURRENT_ENVS,
        NOT_SERVED_ROUTES,
        SERVED_ROUTES,
        ServerStatus,
        Solutions,
        build_app,
        build_served_app,
        env_name_for,
        resolve_max_concurrent_envs,
    )
    from agent_env.openenv.auth import RequireToken
    from agent_env.openenv.background import BackgroundServer
    from agent_env.openenv.environment import AgentEnvEnvironment
    from agent_env.openenv.serve import serve
    from agent_env.openenv.tokens import TOKEN_VARIABLE, resolve_token
    from agent_env.openenv.wire import (
        DEADLINE_KEY,
        ERROR_CODES,
        AgentEnvAction,
        AgentEnvObservation,
        AgentEnvState,
        CallError,
        SessionCounts,
    )
else:
    _lazy_exports(
        __name__,
        {
            "agent_env.openenv.app": [
                "DEFAULT_MAX_CONCURRENT_ENVS",
                "NOT_SERVED_ROUTES",
                "SERVED_ROUTES",
                "ServerStatus",
                "Solutions",
                "build_app",
                "build_served_app",
                "env_name_for",
                "resolve_max_concurrent_envs",
            ],
            "agent_env.openenv.auth": ["RequireToken"],
            "agent_env.openenv.background": ["BackgroundServer"],
            "agent_env.openenv.environment": ["AgentEnvEnvironment"],
            "agent_env.openenv.serve": ["serve"],
            "agent_env.openenv.tokens": ["TOKEN_VARIABLE", "resolve_token"],
            "agent_env.openenv.wire": [
                "DEADLINE_KEY",
                "ERROR_CODES",
                "AgentEnvAction",
                "AgentEnvObservation",
                "AgentEnvState",
                "CallError",
                "SessionCounts",
            ],
        },
    )

__all__ = [
    "DEADLINE_KEY",
    "DEFAULT_MAX_CONCURRENT_ENVS",
    "ERROR_CODES",
    "NOT_SERVED_ROUTES",
    "SERVED_ROUTES",
    "TOKEN_VARIABLE",
    "AgentEnvAction",
    "AgentEnvEnvironment",
    "AgentEnvObservation",
    "AgentEnvState",
    "BackgroundServer",
    "CallError",
    "RequireToken",
    "ServerStatus",
    "SessionCounts",
    "Solutions",
    "build_app",
    "build_served_app",
    "env_name_for",
    "resolve_max_concurrent_envs",
    "resolve_token",
    "serve",
]
