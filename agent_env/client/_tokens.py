"""The bearer token: which one a server requires and a client sends, and the header that carries it.

Both sides resolve it the same way (the argument, else `AGENTENV_TOKEN`) with this module (the server
as `agent_env.openenv._tokens`). The server's check is `agent_env.openenv._auth.RequireToken`.
"""

from __future__ import annotations

import os

from agent_env._errors import ArgumentError

TOKEN_VARIABLE = "AGENTENV_TOKEN"
"""The token server and client use when none is passed."""


def resolve_token(token: str | None = None) -> str | None:
    """The token to require or send: the argument, else `AGENTENV_TOKEN`; empty means none."""
    chosen = token if token is not None else os.environ.get(TOKEN_VARIABLE)
    if not chosen:
        return None
    if chosen != chosen.strip() or any(ord(c) < 0x21 or ord(c) > 0x7E for c in chosen):
        raise ArgumentError(
            f"a token must be printable ASCII without spaces (it travels in an HTTP header); check "
            f"--token or {TOKEN_VARIABLE}"
        )
    return chosen


def bearer(token: str | None) -> dict[str, str]:
    """The header that carries `token`, for a client."""
    return {"Authorization": f"Bearer {token}"} if token else {}
