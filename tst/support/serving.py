"""Types of the `serve` and `connect` fixtures (in tst/conftest.py, for every tier), for annotations."""

from __future__ import annotations

from collections.abc import Callable

from openenv.core.sync_client import SyncEnvClient

from agent_env.openenv import BackgroundServer

Serve = Callable[..., BackgroundServer]
"""The type of the `serve` fixture: an app, or fake tasks by split (and `build_served_app`'s keywords),
to a server."""
Connect = Callable[..., SyncEnvClient]
"""The type of the `connect` fixture: a URL and client options to a client."""
