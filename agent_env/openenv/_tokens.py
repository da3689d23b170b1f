"""The bearer token, as the server imports it: it lives in `agent_env.client._tokens`, which both sides
import (the client's side without agent_env's server). The server's check is `auth.RequireToken`."""

from __future__ import annotations

from agent_env.client._tokens import (
    TOKEN_VARIABLE as TOKEN_VARIABLE,
    bearer as bearer,
    resolve_token as resolve_token,
)
