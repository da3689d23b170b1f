"""A server process for the benchmarks: the bench bundle through `build_app`, or a bare OpenEnv env.

    python -m bench.serve bundle [--sandbox local|docker|docker-before] [--warm N] [--capacity N]
                                 [--record DIR]
    python -m bench.serve bare [--capacity N]
    python -m bench.serve harbor [--warm N] [--capacity N]   (bench/harbor_tasks: two Harbor tasks)
    python -m bench.serve slow-tests [--capacity N]          (bench/slow_tests: test.sh takes 2 s)

Both are served the same way (uvicorn on a loopback port of its own), so the two differ only by what
agent_env adds; the bundle's server holds its connections to `ConnectionLimits`, as `agent-env
serve` does. It prints `port N` once it listens, and stops on SIGTERM or once the benchmark that
started it is gone.
"""

from __future__ import annotations

import argparse
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn

BUNDLE = Path(__file__).resolve().parent / "bundle"
HARBOR_TASKS = Path(__file__).resolve().parent / "harbor_tasks"
SLOW_TESTS = Path(__file__).resolve().parent / "slow_tests"
_ORPHAN_POLL_S = 1.0


def bare_app(capacity: int) -> Any:
    """The smallest OpenEnv environment that answers a step like the bench bundle's `ping`."""
    from openenv.core.env_server import Action, Environment, Observation, State, create_app

    class PingAction(Action):  # type: ignore[misc]
        value: int = 0

    class PingObservation(Observation):  # type: ignore[misc]
        value: int = 0

    class PingEnvironment(Environment):  # type: ignore[misc]
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(step_count=0)

        def reset(self, seed: Any = None, episode_id: Any = None, **kwargs: Any) -> PingObservation:
            self._state = State(step_count=0)
            return PingObservation(value=0)

        def step(self, action: PingAction, timeout_s: Any = None, **kwargs: Any) -> PingObservation:
            self._state.step_count += 1
            return PingObservation(value=action.value)

        @property
        def state(self) -> State:
            return self._state

    return create_app(
        PingEnvironment, PingAction, PingObservation, env_name="bare", max_concurrent_envs=capacity
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["bundle", "bare", "harbor", "slow-tests"])
    parser.add_argument("--sandbox", default="local")
    parser.add_argument("--capacity", type=int, default=512)
    parser.add_argument("--record", help="the bundle's server records every trajectory to this folder")
    parser.add_argument("--warm", type=int, help="the Docker sandboxes' warm pool")
    args = parser.parse_args()
    if args.kind == "bare":
        app = bare_app(args.capacity)
    else:
        from agent_env.openenv import build_app

        sandbox: Any = args.sandbox
        if sandbox == "docker-before":  # the way before the shell and the pool (bench.sandboxes)
            from bench.sandboxes import ContainerPerReset

            sandbox = ContainerPerReset()
        app = build_app(
            {"harbor": HARBOR_TASKS, "slow-tests": SLOW_TESTS}.get(args.kind, BUNDLE),
            sandbox=sandbox,
            max_concurrent_envs=args.capacity,
            record=args.record,
            warm=args.warm,
        )
    listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
    print(f"port {listener.getsockname()[1]}", flush=True)
    options: dict[str, Any] = {"log_level": "warning", "lifespan": "on", "timeout_graceful_shutdown": 30}
    if args.kind == "bare":
        config = uvicorn.Config(app, **options)
    else:
        from agent_env.openenv._connections import ConnectionGuard, ConnectionLimits

        config = ConnectionGuard(ConnectionLimits.for_sessions(args.capacity)).config(app, **options)
    server = uvicorn.Server(config)
    threading.Thread(target=_stop_when_orphaned, args=(server,), daemon=True).start()
    server.run(sockets=[listener])


def _stop_when_orphaned(server: uvicorn.Server) -> None:
    """Stop serving once the benchmark that started this process is gone, however it ended."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(_ORPHAN_POLL_S)
    server.should_exit = True


if __name__ == "__main__":
    main()
