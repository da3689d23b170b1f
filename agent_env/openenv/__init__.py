"""Serve a bundle over OpenEnv 0.10: the Task API, WebSocket sessions, deadlines, tracked teardown.

Behind the `openenv` extra. Importing this package only checks that OpenEnv 0.10 is installed: each
name below loads with its module when first used (`agent_env._lazy`), so the trainer's side imports
the wire contract (`wire`, `tokens`) without agent_env's server. OpenEnv itself takes seconds to
import (its server comes with any part of it; its web interface does not, `agent_env._private.openenv_core`);
the core never imports it.
"""

from __future__ import annotations

import typing as _typing

from agent_env._lazy import lazy_exports as _lazy_exports
from agent_env.openenv._require import require_openenv as _require_openenv

_require_openenv()

if _typing.TYPE_CHECKING:
    from agent_env._server_options import (
        DEFAULT_MAX_CONCURRENT_ENVS as DEFAULT_MAX_CONCURRENT_ENVS,
        ServeOptions as ServeOptions,
        ServerOptions as ServerOptions,
    )
    from agent_env.openenv._app import (
        NOT_SERVED_ROUTES as NOT_SERVED_ROUTES,
        SERVED_ROUTES as SERVED_ROUTES,
        ServerStatus as ServerStatus,
        Solutions as Solutions,
        build_app as build_app,
        build_served_app as build_served_app,
        env_name_for as env_name_for,
        resolve_max_concurrent_envs as resolve_max_concurrent_envs,
    )
    from agent_env.openenv._auth import RequireToken as RequireToken
    from agent_env.openenv._background import BackgroundServer as BackgroundServer
    from agent_env.openenv._connections import ConnectionLimits as ConnectionLimits
    from agent_env.openenv._environment import AgentEnvEnvironment as AgentEnvEnvironment
    from agent_env.openenv._serve import serve as serve
    from agent_env.openenv._tokens import TOKEN_VARIABLE as TOKEN_VARIABLE, resolve_token as resolve_token
    from agent_env.openenv._wire import (
        DEADLINE_KEY as DEADLINE_KEY,
        ERROR_CODES as ERROR_CODES,
        AgentEnvAction as AgentEnvAction,
        AgentEnvObservation as AgentEnvObservation,
        AgentEnvState as AgentEnvState,
        CallError as CallError,
        SessionCounts as SessionCounts,
    )
else:
    _lazy_exports(
        __name__,
        {
            "agent_env.openenv._app": [
                "NOT_SERVED_ROUTES",
                "SERVED_ROUTES",
                "ServerStatus",
                "Solutions",
                "build_app",
                "build_served_app",
                "env_name_for",
                "resolve_max_concurrent_envs",
            ],
            "agent_env.openenv._auth": ["RequireToken"],
            "agent_env.openenv._background": ["BackgroundServer"],
            "agent_env.openenv._connections": ["ConnectionLimits"],
            "agent_env.openenv._environment": ["AgentEnvEnvironment"],
            "agent_env.openenv._serve": ["serve"],
            "agent_env.openenv._tokens": ["TOKEN_VARIABLE", "resolve_token"],
            "agent_env._server_options": ["DEFAULT_MAX_CONCURRENT_ENVS", "ServeOptions", "ServerOptions"],
            "agent_env.openenv._wire": [
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
