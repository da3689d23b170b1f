"""Serve a bundle over OpenEnv 0.10: the Task API, WebSocket sessions, deadlines, tracked teardown.

Behind the `openenv` extra. Importing this package imports OpenEnv (about 7 s, most of it gradio),
so the core never does; only servers and trainers pay for it.
"""

from __future__ import annotations

from agent_env.openenv._require import require_openenv

require_openenv()

from agent_env.openenv.app import (  # noqa: E402
    DEFAULT_MAX_CONCURRENT_ENVS,
    NOT_SERVED_ROUTES,
    SERVED_ROUTES,
    ServerStatus,
    build_app,
    env_name_for,
    resolve_max_concurrent_envs,
)
from agent_env.openenv.auth import RequireToken  # noqa: E402
from agent_env.openenv.background import BackgroundServer  # noqa: E402
from agent_env.openenv.environment import AgentEnvEnvironment  # noqa: E402
from agent_env.openenv.serve import serve  # noqa: E402
from agent_env.openenv.tokens import TOKEN_VARIABLE, resolve_token  # noqa: E402
from agent_env.openenv.wire import (  # noqa: E402
    DEADLINE_KEY,
    ERROR_CODES,
    AgentEnvAction,
    AgentEnvObservation,
    AgentEnvState,
    CallError,
    SessionCounts,
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
    "build_app",
    "env_name_for",
    "resolve_max_concurrent_envs",
    "resolve_token",
    "serve",
]
