"""A bearer token on every route of the server, the WebSocket included.

The server runs whatever bash a bundle's sandbox allows for whoever reaches it; off loopback, a token
is the least it needs. The check is ASGI middleware outside everything else, so a refused request
reaches no route and a refused WebSocket opens no session.
"""

from __future__ import annotations

import hmac
import json
import os

from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_VARIABLE = "AGENTENV_TOKEN"
"""The token server and client use when none is passed."""

_POLICY_VIOLATION = 1008
_DENIAL = "websocket.http.response"


def resolve_token(token: str | None = None) -> str | None:
    """The token to require or send: the argument, else `AGENTENV_TOKEN`; empty means none."""
    chosen = token if token is not None else os.environ.get(TOKEN_VARIABLE)
    if not chosen:
        return None
    if chosen != chosen.strip() or any(ord(c) < 0x21 or ord(c) > 0x7E for c in chosen):
        raise ValueError(
            f"a token must be printable ASCII without spaces (it travels in an HTTP header); check "
            f"--token or {TOKEN_VARIABLE}"
        )
    return chosen


def bearer(token: str | None) -> dict[str, str]:
    """The header that carries `token`, for a client."""
    return {"Authorization": f"Bearer {token}"} if token else {}


class RequireToken:
    """Refuse, with 401, any HTTP request or WebSocket that lacks `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._carries_token(scope):
            await self.app(scope, receive, send)
            return
        why = "missing" if not _authorization(scope) else "wrong"
        body = json.dumps(
            {
                "detail": f"the server requires a bearer token and this one is {why}: pass token= or set "
                f"{TOKEN_VARIABLE}"
            }
        ).encode()
        if scope["type"] == "http":
            await _refuse_http(send, body)
        elif _DENIAL in scope.get("extensions", {}):
            await _refuse_http(send, body, prefix=_DENIAL)
        else:
            await send({"type": "websocket.close", "code": _POLICY_VIOLATION})

    def _carries_token(self, scope: Scope) -> bool:
        return any(hmac.compare_digest(value, self._expected) for value in _authorization(scope))


def _authorization(scope: Scope) -> list[bytes]:
    return [value for name, value in scope.get("headers", []) if name.lower() == b"authorization"]


async def _refuse_http(send: Send, body: bytes, *, prefix: str = "http.response") -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": f"{prefix}.start", "status": 401, "headers": headers})
    await send({"type": f"{prefix}.body", "body": body})
