"""A server in this process, on a free loopback port, for an AgentEnv to use: what `AgentEnv.local` and
`AgentEnv.serving` start, stopped with the AgentEnv (`_held.py`); `local`'s keywords sorted into the
server's options (`agent_env._server_options`, their one definition) and the AgentEnv's. The server's
package and its options are imported only here, when one is started: the trainer's side never loads
them otherwise."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agent_env._errors import ArgumentError

if TYPE_CHECKING:
    from agent_env._bundle.reader import Bundle
    from agent_env._server_options import ServerOptions
    from agent_env.openenv import BackgroundServer

T = TypeVar("T")


def serve_in_process(app: Any, use: Callable[[str], T]) -> tuple[T, BackgroundServer]:
    """Serve `app` (an agent_env server's ASGI app) in this process and `use` its URL; the server is
    stopped again if `use` fails."""
    from agent_env.openenv import BackgroundServer

    server = BackgroundServer(app).start()
    try:
        made = use(server.url)
    except BaseException:
        server.stop()
        raise
    return made, server


def local_app(
    bundle: Bundle | str | Path,
    options: ServerOptions | None,
    given: Mapping[str, Any],
    env_options: Iterable[str],
) -> tuple[Any, ServerOptions, dict[str, Any]]:
    """`AgentEnv.local`'s app: `bundle` served with `options` and the keywords of `given` that are the
    server's (`ServerOptions`' fields); the app, the options it was built with, and the keywords left,
    which must be among `env_options` (an AgentEnv's). A keyword neither takes is an `ArgumentError`
    naming the nearest, before anything is built."""
    from agent_env._server_options import ServerOptions, options_of, unknown_option
    from agent_env.openenv import build_app

    servers = {option.name for option in dataclasses.fields(ServerOptions)}
    envs = set(env_options)
    for name in given:
        if name not in servers | envs:
            raise ArgumentError(unknown_option(name, servers | envs, "AgentEnv.local"))
    chosen = options_of(
        ServerOptions,
        {name: value for name, value in given.items() if name in servers},
        base=options,
        caller="AgentEnv.local",
    )
    left = {name: value for name, value in given.items() if name in envs and name not in servers}
    return build_app(bundle, chosen), chosen, left
