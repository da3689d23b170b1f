"""`agent-env serve`: a bundle over OpenEnv with uvicorn, on loopback unless told otherwise.

Off loopback it requires a token: whoever reaches the server runs the bundle's tools and its sandbox's
bash, so it refuses to start on another address without one unless told, by a flag that says so
(`--insecure-no-token`). It raises the process's soft descriptor limit as far as the hard one allows
(to `DESCRIPTOR_TARGET`) and holds its connections to `ConnectionLimits` (`_connections.py`).

SIGTERM (or Ctrl-C) closes every connection, which interrupts the calls in flight; every episode is
then torn down, and only then does the process end, by that signal as uvicorn has it (exit status
143 for SIGTERM, so supervisors see a normal stop). Handlers still busy after `GRACEFUL_SHUTDOWN_S`
are cancelled, and their episodes torn down all the same.
"""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path
from typing import Any, TextIO

import uvicorn

from agent_env._bundle.reader import Bundle
from agent_env._errors import ArgumentError
from agent_env._loading import load_bundle
from agent_env._origins import binds_loopback
from agent_env._server_options import ServeOptions, ServerOptions, options_of
from agent_env.judges._judging import Judging
from agent_env.openenv._app import build_app, resolve_max_concurrent_envs
from agent_env.openenv._connections import ConnectionGuard, ConnectionLimits, raise_descriptor_limit
from agent_env.openenv._tokens import TOKEN_VARIABLE, resolve_token

GRACEFUL_SHUTDOWN_S = 30
"""How long a shutdown waits for busy handlers before cancelling them (teardowns are waited for)."""

log = logging.getLogger("agent_env.openenv")


def serve(
    bundle: Bundle | str | Path,
    options: ServerOptions | None = None,
    *,
    limits: ConnectionLimits | None = None,
    out: TextIO = sys.stdout,
    **given: Any,
) -> None:
    """Serve `bundle` until SIGTERM or Ctrl-C; logs one line per episode.

    Its options are `ServeOptions`' (`agent_env._server_options`, where each is described, with its
    default): `build_app`'s, and `host`, `port` and `insecure_no_token`; given as keywords or as
    `options` (a `ServerOptions` serves on the default address), which keywords override. Without a
    token, a `host` other than loopback is refused (an `ArgumentError` saying how to set one) unless
    `insecure_no_token`. The start says how many tasks were skipped (`skip_broken_tasks`) and lists
    each with its first problem, and what each judge asks. `limits` (default:
    `ConnectionLimits.for_sessions` of the capacity) bound its connections; the start lines go to `out`.
    """
    chosen = options_of(ServeOptions, given, base=options, caller="serve")
    host = chosen.host
    guarded = resolve_token(chosen.token) is not None
    if not guarded and not chosen.insecure_no_token and not binds_loopback(host):
        raise ArgumentError(_unguarded_refusal(host))
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log.setLevel(logging.INFO)
    loaded = (
        bundle
        if isinstance(bundle, Bundle)
        else load_bundle(bundle, skip_broken_tasks=chosen.skip_broken_tasks)
    )
    capacity = resolve_max_concurrent_envs(chosen.max_concurrent_envs)
    app = build_app(loaded, chosen, max_concurrent_envs=capacity)
    name = app.state.agent_env.name
    raise_descriptor_limit()
    limits = limits or ConnectionLimits.for_sessions(capacity)
    listener = socket.create_server(
        (host, chosen.port), family=socket.AF_INET6 if ":" in host else socket.AF_INET, backlog=limits.backlog
    )
    bound = listener.getsockname()[1]
    where = f"[{host}]" if ":" in host else host
    splits = ", ".join(f"{split} {len(tasks)}" for split, tasks in loaded.splits.items())
    print(
        f"agent-env: serving {loaded.name} ({splits} tasks) on http://{where}:{bound}, "
        f"WebSocket ws://{where}:{bound}/ws, Task API /{name}/..., at most {capacity} sessions"
        + (", bearer token required" if guarded else "")
        + _internet(loaded, chosen.allow_internet)
        + _skipped(loaded),
        file=out,
        flush=True,
    )
    if (summary := loaded.skipped_summary()) is not None:
        print(f"agent-env: {summary}", file=out, flush=True)
    if chosen.record is not None:
        print(f"agent-env: recording trajectories to {Path(chosen.record).resolve()}", file=out, flush=True)
    judging = Judging.from_environment(
        url=chosen.judge_url, model=chosen.judge_model, cache=chosen.judge_cache
    )
    for line in judging.described(loaded.judges):
        print(f"agent-env: {line}", file=out, flush=True)
    for warning in (exposure_warning(host, guarded=guarded), limits.shortfall(capacity)):
        if warning:
            print(f"agent-env: warning: {warning}", file=out, flush=True)
    config = ConnectionGuard(limits).config(
        app, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S, lifespan="on", log_level="info"
    )
    uvicorn.Server(config).run(sockets=[listener])


def exposure_warning(host: str, *, guarded: bool) -> str | None:
    """What to tell whoever serves on `host`, when it is not a loopback address."""
    if binds_loopback(host):
        return None
    if guarded:
        who = "whoever reaches it with the token"
    else:
        who = "whoever reaches it, with no token asked (--insecure-no-token),"
    return f"{host} is not a loopback address: {who} can run this bundle's tools and its sandbox's bash"


def _unguarded_refusal(host: str) -> str:
    return (
        f"refusing to serve on {host} without a token: it is not a loopback address, so whoever "
        "reaches it could run this bundle's tools and its sandbox's bash. Set "
        f"{TOKEN_VARIABLE}, or pass --token-file PATH (a file holding the token), and clients send it "
        "as `Authorization: Bearer <token>`; to serve there without a token all the same, pass "
        "--insecure-no-token"
    )


def _skipped(bundle: Bundle) -> str:
    """What the start line says of the tasks the load skipped: how many (listed below it)."""
    if not bundle.skipped:
        return ""
    total = sum(len(tasks) for tasks in bundle.splits.values()) + len(bundle.skipped)
    return f"; {len(bundle.skipped)} of {total} tasks skipped: they do not load (listed below)"


def _internet(bundle: Bundle, allowed: bool) -> str:
    """What the start line says of the tasks that ask for the internet: whether they get it."""
    asking = [t.id for tasks in bundle.splits.values() for t in tasks if t.sandbox_settings.asks_network]
    if not asking:
        return ""
    if allowed:
        return f"; {len(asking)} tasks ask for the internet and get it (--allow-internet)"
    return f"; {len(asking)} tasks ask for the internet and run without it (--allow-internet gives it)"
