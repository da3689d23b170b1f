"""Serve an app with uvicorn on a thread of its own, on a loopback port: for tests and in-process use.

Its connections are held to `ConnectionLimits` as `agent-env serve`'s are (`_connections.py`).
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from agent_env._errors import StateError, TimedOutError
from agent_env._server_options import DEFAULT_MAX_CONCURRENT_ENVS
from agent_env.openenv._connections import ConnectionGuard, ConnectionLimits

_STARTED_POLL_S = 0.01


class BackgroundServer:
    """A uvicorn server for `app` on a thread; `port=0` takes a free port, `url` says which; other
    keywords are `uvicorn.Config`'s (`ws_ping_interval=`, say). `limits` (default: those of the
    app's capacity, `ConnectionLimits.for_sessions`) bound its connections; `guard` counts them.
    `app` is the app it serves."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: str = "warning",
        limits: ConnectionLimits | None = None,
        **uvicorn_options: Any,
    ) -> None:
        self._socket = socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
        )
        self.app = app
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        self.guard = ConnectionGuard(limits or ConnectionLimits.for_sessions(_capacity(app)))
        config = self.guard.config(
            app, log_level=log_level, log_config=None, lifespan="on", **uvicorn_options
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self._socket]},
            name=f"agent-env-server-{self.port}",
            daemon=True,
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> BackgroundServer:
        """Start serving; returns once the server accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive():
                raise StateError(f"the server on {self.url} stopped while starting: see its log above")
            if time.monotonic() > deadline:
                self.stop()
                raise TimedOutError(f"the server on {self.url} did not start within {timeout_s:g} s")
            time.sleep(_STARTED_POLL_S)
        return self

    def stop(self, timeout_s: float = 60.0) -> None:
        """Shut down as on SIGTERM (every episode torn down) and wait for the thread to end."""
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._socket.close()
        if self._thread.is_alive():
            raise TimedOutError(f"the server on {self.url} did not shut down within {timeout_s:g} s")

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def _capacity(app: ASGIApp) -> int:
    """The sessions `app` holds at once, if it is one `build_served_app` made."""
    context = getattr(getattr(app, "state", None), "agent_env", None)
    sessions = getattr(context, "max_concurrent_envs", None)
    return sessions if isinstance(sessions, int) else DEFAULT_MAX_CONCURRENT_ENVS
