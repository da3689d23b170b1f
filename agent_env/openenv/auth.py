"""A bearer token on every route of the server, the WebSocket included.

The server runs whatever bash a bundle's sandbox allows for whoever reaches it; off loopback, a token
is the least it needs. The check is ASGI middleware outside everything else, so a refused request
reaches no route and a refused WebSocket opens no session. Which token it is, and the header that
carries it, are `tokens.py`'s, which the trainer's side imports too.
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from agent_env.openenv.tokens import TOKEN_VARIABLE as TOKEN_VARIABLE  # re-exported: their first home
from agent_env.openenv.tokens import bearer as bearer
from agent_env.openenv.tokens import resolve_token as resolve_token

_POLICY_VIOLATION = 1008
_DENIAL = "websocket.http.response"


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
