"""The ASGI app that serves a bundle: `build_app(bundle)`, made by `_app(served)` alone.

`_app` is the one place the app is put together, so tests that serve hand-built tasks (the fake
steps of `agent_env.testing`) run exactly the server a bundle gets. The app is OpenEnv's own, from
`create_app`, in OpenEnv's production mode: episodes live in WebSocket sessions, so the stateless
HTTP `/reset` and `/step` (which would deploy an episode per request) are not served.
"""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path

from fastapi import FastAPI, HTTPException, status
from openenv.core.env_server import create_app
from pydantic import BaseModel

from agent_env.bundle import Bundle, load_bundle
from agent_env.openenv.auth import RequireToken, resolve_token
from agent_env.openenv.context import ServerContext
from agent_env.openenv.disconnects import WatchDisconnects
from agent_env.openenv.environment import AgentEnvEnvironment
from agent_env.openenv.wire import AgentEnvAction, AgentEnvObservation, AgentEnvState
from agent_env.sandbox.base import SandboxProvider
from agent_env.served import Served, serve_bundle

DEFAULT_MAX_CONCURRENT_ENVS = 64
"""Sessions one server holds at once unless `max_concurrent_envs=` or `MAX_CONCURRENT_ENVS` says otherwise."""

CAPACITY_VARIABLE = "MAX_CONCURRENT_ENVS"


class ServerStatus(BaseModel):
    """`GET /{env_name}/status`: what the server holds now."""

    env_name: str
    connections: int
    live_episodes: int
    tearing_down: int
    max_concurrent_envs: int
    shutting_down: bool


def build_app(
    bundle: Bundle | str | Path,
    *,
    max_concurrent_envs: int | None = None,
    sandbox: str | SandboxProvider | None = None,
    env_name: str | None = None,
    token: str | None = None,
) -> FastAPI:
    """The app that serves `bundle` (a folder or a loaded `Bundle`) over OpenEnv.

    `sandbox` overrides the bundle's sandbox provider; `env_name` (default: the bundle's name) is the
    `{env_name}` of the Task API's routes. `token` (default: `AGENTENV_TOKEN`, if set) is then
    required as `Authorization: Bearer <token>` on every route, the WebSocket included.
    """
    loaded = bundle if isinstance(bundle, Bundle) else load_bundle(bundle)
    return _app(
        serve_bundle(loaded, sandbox=sandbox),
        name=env_name or loaded.name,
        description=loaded.config.description,
        max_concurrent_envs=max_concurrent_envs,
        token=token,
    )


def _app(
    served: Served,
    *,
    name: str = "tasks",
    description: str = "",
    max_concurrent_envs: int | None = None,
    token: str | None = None,
) -> FastAPI:
    """The app that serves `served`; `build_app` and the tests' hand-built tasks both come here."""
    required_token = resolve_token(token)
    context = ServerContext(
        env_name_for(name),
        served,
        description,
        max_concurrent_envs=resolve_max_concurrent_envs(max_concurrent_envs),
    )
    app: FastAPI = create_app(
        partial(AgentEnvEnvironment, context),
        AgentEnvAction,
        AgentEnvObservation,
        env_name=context.name,
        max_concurrent_envs=context.max_concurrent_envs,
        state_cls=AgentEnvState,
        mode="production",
    )
    app.state.agent_env = context
    app.router.on_shutdown.append(context.shut_down)
    app.add_middleware(WatchDisconnects, links=context.links)
    if required_token is not None:
        app.add_middleware(RequireToken, token=required_token)  # the outermost: refused before all else
    app.state.token_required = required_token is not None

    @app.get("/{env_name}/status", tags=["Task API"])
    async def server_status(env_name: str) -> ServerStatus:
        if env_name.lower() != context.name.lower():
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown environment {env_name!r}")
        return ServerStatus(
            env_name=context.name,
            connections=len(context.links),
            live_episodes=context.tracker.live,
            tearing_down=context.tracker.tearing_down,
            max_concurrent_envs=context.max_concurrent_envs,
            shutting_down=context.tracker.closing,
        )

    return app


def resolve_max_concurrent_envs(max_concurrent_envs: int | None = None) -> int:
    """The server's session capacity: the argument, else `MAX_CONCURRENT_ENVS`, else the default."""
    if max_concurrent_envs is not None:
        if (
            isinstance(max_concurrent_envs, bool)
            or not isinstance(max_concurrent_envs, int)
            or max_concurrent_envs < 1
        ):
            raise ValueError(f"max_concurrent_envs must be a positive integer, got {max_concurrent_envs!r}")
        return max_concurrent_envs
    raw = os.environ.get(CAPACITY_VARIABLE)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_CONCURRENT_ENVS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(
            f"{CAPACITY_VARIABLE} must be a positive integer, got {raw!r}: set it to, say, "
            f"{DEFAULT_MAX_CONCURRENT_ENVS}, or pass max_concurrent_envs="
        )
    return value


def env_name_for(name: str) -> str:
    """The name the Task API's routes use: the bundle's name, made safe for a URL path."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "tasks"
