"""The ASGI app that serves a bundle: `build_app(bundle)`, made by `build_served_app(served)` alone.

`build_served_app` is the one place the app is put together, so served tasks that are not a
bundle's (the fake steps of `agent_env.testing`, in tests) run exactly the server a bundle gets. The
app is a FastAPI app of our own with OpenEnv's `HTTPEnvServer` routes registered on it in production
mode (not `create_app`, which turns into a Gradio app when `ENABLE_WEB_INTERFACE` is set), so it
holds the server and can count its sessions. It serves exactly `SERVED_ROUTES`; `NOT_SERVED_ROUTES`
says why each other route OpenEnv has is not served. A session exists only while a client's
WebSocket on `/ws` holds it: no route lets anyone create one that outlives its connection.

At shutdown the app's lifespan interrupts every call still running and tears down every episode
(`ServerContext.shut_down`). OpenEnv also puts startup and shutdown handlers on the app, for its
idle-session reaper, which FastAPI runs only when an app has no lifespan of its own; this one never
needs them, since its sessions have no idle timeout (they end with their connection).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Path as PathParameter, Response, status
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIWebSocketRoute
from pydantic import BaseModel, Field
from starlette.routing import BaseRoute, WebSocketRoute

import agent_env
from agent_env._bundle.reader import Bundle
from agent_env._contracts.sandbox import RunsWithServer, SandboxProvider
from agent_env._errors import StateError
from agent_env._loading import load_bundle
from agent_env._origins import AllowedHosts
from agent_env._positive import positive_count
from agent_env._served import ServedTasks, served_tasks
from agent_env._server_options import (
    CAPACITY_VARIABLE,
    DEFAULT_MAX_CONCURRENT_ENVS,
    ServerOptions,
    options_of,
)
from agent_env._specs import (
    CURRICULUM_RUN_LENGTH,
    CurriculumDraw,
    CurriculumDrawn,
    CurriculumScore,
    SolutionSpec,
    tasks_fingerprint,
)
from agent_env._trajectory_recorder import Redaction, TrajectoryRecorder
from agent_env.judges._judging import Judging
from agent_env.openenv._auth import OwnHostsOnly, RequireToken
from agent_env.openenv._bodies import BoundedBodies, validation_refused
from agent_env.openenv._context import ServerContext
from agent_env.openenv._curricula import Curricula, CurriculumRefusedError
from agent_env.openenv._disconnects import WatchDisconnects
from agent_env.openenv._environment import AgentEnvEnvironment
from agent_env.openenv._metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE, ServerMetrics
from agent_env.openenv._sessions import SessionServer, own_sessions_only
from agent_env.openenv._tokens import resolve_token
from agent_env.openenv._tracker import EpisodeTracker
from agent_env.openenv._wire import AgentEnvAction, AgentEnvObservation, AgentEnvState, SessionCounts
from agent_env.sandbox._by_task import SandboxesByTask
from agent_env.sandbox._pool import PoolStatus, WarmPool
from agent_env.sandbox._registry import server_provider

RunKey = Annotated[str, PathParameter(min_length=1, max_length=CURRICULUM_RUN_LENGTH)]
"""A training run's key in a curriculum route's path: the same bounds as in a request's body."""

SERVED_ROUTES: dict[str, str] = {
    "WEBSOCKET /ws": "sessions: one per connection, held only while it lasts; episodes are played here",
    "GET /health": "whether the server runs",
    "GET /metadata": "the bundle's name, description and version",
    "GET /schema": "the JSON Schemas of the action, the observation and the state",
    "GET /list_environments": "the Task API: the one environment served",
    "GET /{env_name}/splits": "the Task API: the splits",
    "POST /{env_name}/tasks": "the Task API: a split's task specs",
    "POST /{env_name}/num_tasks": "the Task API: how many tasks a split has",
    "POST /{env_name}/task": "the Task API: one task spec",
    "POST /{env_name}/task_range": "the Task API: a range of task specs",
    "POST /{env_name}/solutions": "the Task API: a split's reference plays (solutions/SPLIT.jsonl)",
    "POST /{env_name}/curriculum/draw": "the online curriculum: a GRPO group's task",
    "POST /{env_name}/curriculum/scores": "the online curriculum: one rollout's score, for its group",
    "GET /{env_name}/curriculum/{run}": "the online curriculum: a run's state, as a checkpoint keeps it",
    "PUT /{env_name}/curriculum/{run}": "the online curriculum: a run's state restored from a checkpoint",
    "GET /{env_name}/status": "what the server holds now: connections, episodes, sessions by kind",
    "GET /metrics": "the same and what episodes did, for Prometheus (`agent_env.openenv._metrics`)",
    "GET /openapi.json": "the HTTP routes' OpenAPI schema",
    "GET /docs": "the schema's pages (Swagger UI)",
    "GET /docs/oauth2-redirect": "part of the Swagger UI",
    "GET /redoc": "the schema's pages (ReDoc)",
}
"""Every route the app serves, as `METHOD /path` (`WEBSOCKET` for a WebSocket), and what it is for."""

NOT_SERVED_ROUTES: dict[str, str] = {
    "POST /mcp": "its openenv/session/create let anyone make a session that holds capacity until "
    "closed (OpenEnv's idle reaper is off), which filled the server for good; and AgentEnvEnvironment "
    "is not an MCP environment, so tools/list and tools/call only answer that it does not support MCP",
    "WEBSOCKET /mcp": "a session per connection, held while connected, that can only answer that MCP "
    "is not supported",
    "WEBSOCKET /harness": "registered only for OpenEnv's HarnessEnvironment, which this is not",
    "POST /reset": "simulation mode only: a stateless reset would deploy an episode per request",
    "POST /step": "simulation mode only: an episode lives in a WebSocket session",
    "GET /state": "simulation mode only: a session's state is the `state` message on /ws",
}
"""Every other route OpenEnv 0.10 registers (in production or simulation mode), and why it is not served.

`/ws?session_id=<id>`, which attaches a connection to an existing session, is refused with an error
frame (`sessions.own_sessions_only`): with no HTTP sessions it could only attach to another client's.
"""

log = logging.getLogger("agent_env.openenv")


class ServerStatus(BaseModel):
    """`GET /{env_name}/status`: what the server holds now."""

    env_name: str
    connections: int = Field(description="WebSocket connections open now.")
    live_episodes: int
    live_sandboxes: int = Field(description="Sandboxes of live episodes.")
    tearing_down: int
    max_concurrent_envs: int
    sessions: SessionCounts = Field(description="The sessions that hold capacity, by kind.")
    shutting_down: bool
    warm_pool: PoolStatus | None = Field(
        None, description="The Docker sandboxes' warm pool (`--warm`), if the server keeps one."
    )
    tasks_fingerprint: str = Field(
        description="A digest of what decides the tasks and their scores (`agent_env.tasks_fingerprint`): "
        "every task spec the Task API lists and, for a bundle, every file of its folder. Servers with "
        "the same one serve the same tasks, scored alike; each reset's answer carries it too."
    )


class SolutionsRequest(BaseModel):
    """`POST /{env_name}/solutions`'s body: which split, asked as `/{env_name}/tasks` is."""

    split: str = Field(description="The split whose reference plays to list.")


class Solutions(BaseModel):
    """`POST /{env_name}/solutions`: the reference plays of a split's tasks that have one."""

    env_name: str
    solutions: list[SolutionSpec] = Field(description="In index order; a task without one is left out.")


def build_app(bundle: Bundle | str | Path, options: ServerOptions | None = None, **given: Any) -> FastAPI:
    """The app that serves `bundle` (a folder or a loaded `Bundle`) over OpenEnv.

    Its options are `ServerOptions`' (`agent_env._server_options`, where each is described, with its
    default), given as keywords (`build_app(bundle, max_concurrent_envs=64, record="runs")`) or as
    `options`, which keywords override; a keyword that is none of them is an `ArgumentError` naming
    the nearest. The token, if any, is required as `Authorization: Bearer <token>` on every route,
    the WebSocket included. Requests addressed to a host other than a loopback name, an IP address
    or one of `allowed_hosts`, and requests from a web page of another origin, are refused with 403.
    Each episode's trajectory is recorded once it is torn down, the token and what the bundle's
    `[record]` marks secret redacted. Tasks that bring their own sandboxes (Harbor tasks) get a
    provider, and `warm` containers, per image; those that ask for the internet get it only with
    `allow_internet`. With `skip_broken_tasks`, a folder's tasks that do not load are logged with
    their first problems and counted in `/metrics` (`agent_env_tasks_skipped`); a loaded `Bundle` was
    loaded as its caller chose. A judge without an endpoint, or whose key's variable is unset, is an
    `ArgumentError` here, before any episode (`agent_env.judges.Judging`).
    """
    chosen = options_of(ServerOptions, given, base=options, caller="build_app")
    sandbox, warm = chosen.sandbox, chosen.warm
    if isinstance(bundle, Bundle):
        loaded = bundle
    else:
        loaded = load_bundle(bundle, skip_broken_tasks=chosen.skip_broken_tasks)
        if (summary := loaded.skipped_summary()) is not None:
            log.warning("%s", summary)
    judging = Judging.from_environment(
        url=chosen.judge_url, model=chosen.judge_model, cache=chosen.judge_cache
    )
    judging.admit(loaded.judges)
    recorder = None
    if chosen.record is not None:
        secrets = loaded.config.record
        token_value = resolve_token(chosen.token)
        redaction = Redaction.of(
            keys=secrets.redact_keys, env=secrets.redact_env, values=[token_value] if token_value else []
        )
        recorder = TrajectoryRecorder(chosen.record, max_mb=chosen.record_max_mb, redaction=redaction)
    settings = loaded.config.sandbox
    provider: SandboxProvider
    if loaded.sandbox_per_task and (sandbox is None or sandbox == "docker"):
        tasks = [task for split in loaded.splits.values() for task in split]
        provider = SandboxesByTask(
            (task.sandbox_settings for task in tasks), warm=warm or 0, allow_network=chosen.allow_internet
        )
    else:
        provider = server_provider(sandbox if sandbox is not None else settings.provider, settings, warm=warm)
    return build_served_app(
        served_tasks(loaded, sandbox=provider, judging=judging),
        name=chosen.env_name or loaded.name,
        description=loaded.config.description,
        max_concurrent_envs=chosen.max_concurrent_envs,
        token=chosen.token,
        recorder=recorder,
        sandboxes=provider,
        content_digest=loaded.content_digest,
        allowed_hosts=chosen.allowed_hosts,
        skipped_tasks=len(loaded.skipped),
        judging=judging,
    )


def build_served_app(
    served: ServedTasks,
    *,
    name: str = "tasks",
    description: str = "",
    max_concurrent_envs: int | None = None,
    token: str | None = None,
    recorder: TrajectoryRecorder | None = None,
    sandboxes: SandboxProvider | None = None,
    content_digest: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
    skipped_tasks: int = 0,
    judging: Judging | None = None,
) -> FastAPI:
    """The app that serves `served` (split -> tasks, as `served_tasks` makes them) over OpenEnv.

    The seam under `build_app`, which passes it a bundle's served tasks: pass any others, such as
    `agent_env.testing.fake_served(...)`, to get exactly the server a bundle gets. `name` is the
    `{env_name}` of the Task API's routes (made safe for a URL path), `description` the app's;
    `max_concurrent_envs`, `token` and `allowed_hosts` are as for `build_app`; `recorder`, if given,
    gets every episode's trajectory once it is torn down, and is closed when the server shuts down.
    `sandboxes`, the provider the tasks' episodes use, is started with the server and closed after
    its last teardown if it has work of its own (`RunsWithServer`: a warm pool, say).
    `content_digest`, the digest of the files the tasks come from (`Bundle.content_digest`, which
    `build_app` passes), goes into the server's `tasks_fingerprint` beside the specs. `skipped_tasks`
    is how many tasks the bundle's load left out (`Bundle.skipped`): `/metrics`' `agent_env_tasks_skipped`.
    `judging`, what the tasks' `judge` verifiers ask through (`served_tasks`'), is counted in `/metrics`
    and its endpoints' clients closed at shutdown.
    """
    required_token = resolve_token(token)
    allowed = AllowedHosts.of(allowed_hosts)

    def status_now() -> ServerStatus:
        return ServerStatus(
            env_name=context.name,
            connections=len(context.links),
            live_episodes=context.tracker.live,
            live_sandboxes=context.tracker.live_sandboxes,
            tearing_down=context.tracker.tearing_down,
            max_concurrent_envs=context.max_concurrent_envs,
            sessions=server.counts(),
            shutting_down=context.tracker.closing,
            warm_pool=sandboxes.status() if isinstance(sandboxes, WarmPool | SandboxesByTask) else None,
            tasks_fingerprint=context.fingerprint,
        )

    curricula = Curricula(served)
    metrics = ServerMetrics(status_now, recorder, skipped_tasks=skipped_tasks, curricula=curricula)
    if judging is not None:
        judging.observe(metrics.judged)
    context = ServerContext(
        env_name_for(name),
        served,
        description,
        max_concurrent_envs=resolve_max_concurrent_envs(max_concurrent_envs),
        tracker=EpisodeTracker(recorder, metrics=metrics),
        fingerprint=tasks_fingerprint(
            {split: [task.spec for task in tasks] for split, tasks in served.items()}, content=content_digest
        ),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        running = sandboxes if isinstance(sandboxes, RunsWithServer) else None
        if running is not None:
            await running.start()
        try:
            yield
        finally:
            await context.shut_down()
            if running is not None:
                await running.close()
            if judging is not None:
                await judging.aclose()

    app = FastAPI(
        title=context.name,
        description=(f"{description}\n\n" if description else "")
        + f"Tasks served by agent_env: the Task API lists them (`/{context.name}/...`); episodes are "
        "played in sessions over the WebSocket `/ws`, one per connection.",
        version=agent_env.__version__,
        lifespan=lifespan,
    )
    server = SessionServer(
        partial(AgentEnvEnvironment, context),
        AgentEnvAction,
        AgentEnvObservation,
        env_name=context.name,
        max_concurrent_envs=context.max_concurrent_envs,
        state_cls=AgentEnvState,
        links=context.links,
    )
    server.register_routes(app, mode="production")
    _refuse_attaching(app)
    app.state.agent_env = context
    app.state.openenv_server = server
    app.add_middleware(WatchDisconnects, links=context.links)
    app.add_middleware(BoundedBodies)
    app.add_exception_handler(RequestValidationError, validation_refused)
    if required_token is not None:
        app.add_middleware(RequireToken, token=required_token)
    app.add_middleware(OwnHostsOnly, allowed=allowed)  # the outermost: a foreign page learns nothing more
    app.state.token_required = required_token is not None

    @app.get("/{env_name}/status", tags=["Task API"])
    async def server_status(env_name: str) -> ServerStatus:
        if env_name.lower() != context.name.lower():
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown environment {env_name!r}")
        return status_now()

    @app.get("/metrics", tags=["Monitoring"], response_class=Response)
    async def server_metrics() -> Response:
        return Response(metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    @app.post("/{env_name}/solutions", tags=["Task API"])
    async def list_solutions(env_name: str, request: SolutionsRequest) -> Solutions:
        if env_name.lower() != context.name.lower():
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown environment {env_name!r}")
        return Solutions(
            env_name=context.name, solutions=AgentEnvEnvironment(context).list_solutions(request.split)
        )

    def _ours(env_name: str) -> None:
        if env_name.lower() != context.name.lower():
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"unknown environment {env_name!r}")

    @app.post("/{env_name}/curriculum/draw", tags=["Curriculum"])
    async def curriculum_draw(env_name: str, request: CurriculumDraw) -> CurriculumDrawn:
        _ours(env_name)
        with _refused_as_http():
            return curricula.draw(request)

    @app.post("/{env_name}/curriculum/scores", tags=["Curriculum"])
    async def curriculum_score(env_name: str, request: CurriculumScore) -> dict[str, bool]:
        _ours(env_name)
        with _refused_as_http():
            curricula.record(request)
        return {"recorded": True}

    @app.get("/{env_name}/curriculum/{run}", tags=["Curriculum"])
    async def curriculum_state(env_name: str, run: RunKey) -> dict[str, Any]:
        _ours(env_name)
        with _refused_as_http():
            return curricula.state(run)

    @app.put("/{env_name}/curriculum/{run}", tags=["Curriculum"])
    async def curriculum_restore(env_name: str, run: RunKey, state: dict[str, Any]) -> dict[str, bool]:
        _ours(env_name)
        with _refused_as_http():
            curricula.restore(run, state)
        return {"restored": True}

    _serve_only_listed(app)
    return app


@contextlib.contextmanager
def _refused_as_http() -> Iterator[None]:
    """A curriculum request refused, as the HTTP error that says why."""
    try:
        yield
    except CurriculumRefusedError as refused:
        raise HTTPException(refused.status, str(refused)) from None


def _refuse_attaching(app: FastAPI) -> None:
    """Put OpenEnv's `/ws` handler behind `own_sessions_only`."""
    for index, route in enumerate(app.router.routes):
        if isinstance(route, APIWebSocketRoute) and route.path == "/ws":
            app.router.routes[index] = APIWebSocketRoute(
                route.path,
                own_sessions_only(route.endpoint),
                name=route.name,
                dependency_overrides_provider=app,
            )
            return
    raise StateError("OpenEnv registered no /ws route: this OpenEnv is not the 0.10 agent_env serves on")


def _serve_only_listed(app: FastAPI) -> None:
    """Drop every route `SERVED_ROUTES` lacks, warning of any that `NOT_SERVED_ROUTES` does not explain
    (a route a newer OpenEnv adds is not served until someone reviews it)."""
    kept = []
    for route in app.router.routes:
        keys = _route_keys(route)
        if keys <= SERVED_ROUTES.keys():
            kept.append(route)
        elif unreviewed := sorted(keys - SERVED_ROUTES.keys() - NOT_SERVED_ROUTES.keys()):
            log.warning(
                "not serving %s: OpenEnv registers it and nobody has reviewed it (SERVED_ROUTES in %s)",
                ", ".join(unreviewed),
                __name__,
            )
    app.router.routes[:] = kept


def _route_keys(route: BaseRoute) -> set[str]:
    """A route as `SERVED_ROUTES` names it: `METHOD /path` for each method (HEAD aside), `WEBSOCKET /path`."""
    path = getattr(route, "path", repr(route))
    if isinstance(route, WebSocketRoute):
        return {f"WEBSOCKET {path}"}
    methods = getattr(route, "methods", None) or {"MOUNT"}
    return {f"{method} {path}" for method in methods if method != "HEAD"}


def resolve_max_concurrent_envs(max_concurrent_envs: int | None = None) -> int:
    """The server's session capacity: the argument, else `MAX_CONCURRENT_ENVS`, else the default."""
    return positive_count(
        max_concurrent_envs,
        name="max_concurrent_envs",
        variable=CAPACITY_VARIABLE,
        default=DEFAULT_MAX_CONCURRENT_ENVS,
        or_else=", or pass max_concurrent_envs=",
    )


def env_name_for(name: str) -> str:
    """The name the Task API's routes use: the bundle's name, made safe for a URL path."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "tasks"
