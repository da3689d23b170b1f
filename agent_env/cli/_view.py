"""`agent-env view DIR`: serve the page over a folder of trajectories until Ctrl-C.

Loopback unless `--host` names another address, which the user then passes on purpose: the page
shows every prompt, argument and result the episodes held. What it cannot show is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import sys

from agent_env._origins import binds_loopback
from agent_env.view import ViewError, ViewServer

DEFAULT_HOST = "127.0.0.1"


def view(folder: str, *, host: str | None, port: int) -> int:
    """Serve `folder` until interrupted; `host` is None unless the user named one."""
    bind = host or DEFAULT_HOST
    try:
        server = ViewServer(folder, host=bind, port=port, remote=host is not None)
    except OSError as exc:
        print(
            f"error: cannot serve on {bind}:{port} ({exc.strerror or exc}); pass another --port",
            file=sys.stderr,
        )
        return 2
    try:
        listing = server.folder.check()
    except ViewError as exc:
        server.stop()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    skipped = f", {len(listing.skipped)} lines skipped" if listing.skipped else ""
    count = len(listing.episodes)
    print(f"agent-env view: {count} episode{'' if count == 1 else 's'} in {folder}{skipped}", flush=True)
    print(f"agent-env view: serving at {server.url} (Ctrl-C stops)", flush=True)
    if not binds_loopback(bind):
        print(
            f"agent-env view: {bind} is not loopback: anyone who reaches it sees every episode",
            file=sys.stderr,
            flush=True,
        )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        return 130
    return 0
