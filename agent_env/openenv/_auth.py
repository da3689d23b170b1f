"""Who may use the server: requests addressed to it by its own pages or by no page, with its token.

The server runs whatever bash a bundle's sandbox allows for whoever reaches it. Two checks, both
ASGI middleware outside everything else, so a refused request reaches no route and a refused
WebSocket opens no session: `OwnHostsOnly` (outermost) refuses a Host header that names neither
loopback, an IP address nor an allowed host, and an Origin that is not the server's own
(`agent_env._origins`: a web page anywhere could otherwise drive it through the user's browser);
`RequireToken` then asks for the bearer token, when there is one. Which token it is, and the header
that carries it, are `_tokens.py`'s, which the trainer's side imports too.
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from agent_env._origins import AllowedHosts
from agent_env.client._tokens import TOKEN_VARIABLE

_POLICY_VIOLATION = 1008
_DENIAL = "websocket.http.response"


class OwnHostsOnly:
    """Refuse, with 403, any HTTP request or WebSocket addressed to a foreign host or from a foreign page."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        why = self.allowed.refusal(
            _header(scope, b"host"), _header(scope, b"origin"), secure=scope.get("scheme") in ("https", "wss")
        )
        if why is None:
            await self.app(scope, receive, send)
        else:
            await _refuse(scope, send, 403, why)


class RequireToken:
    """Refuse, with 401, any HTTP request or WebSocket that lacks `Authorization: Bearer <token>`
    (the scheme in any case, as HTTP has it)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._carries_token(scope):
            await self.app(scope, receive, send)
            return
        why = "missing" if not _header(scope, b"authorization") else "wrong"
        detail = (
            f"the server requires a bearer token and this one is {why}: pass token= or set {TOKEN_VARIABLE}"
        )
        await _refuse(scope, send, 401, detail, [(b"www-authenticate", b"Bearer")])

    def _carries_token(self, scope: Scope) -> bool:
        for value in _header(scope, b"authorization"):
            scheme, _, credentials = value.encode("latin-1").partition(b" ")
            if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(b" "), self._expected):
                return True
        return False


def _header(scope: Scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", []) if key.lower() == name]


async def _refuse(
    scope: Scope, send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Answer `status` with `{"detail": ...}`; a WebSocket at its handshake, or closed 1008 where the
    server cannot answer a handshake with a response."""
    if scope["type"] == "websocket" and _DENIAL not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": _POLICY_VIOLATION})
        return
    prefix = "http.response" if scope["type"] == "http" else _DENIAL
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(headers or []),
    ]
    await send({"type": f"{prefix}.start", "status": status, "headers": headers})
    await send({"type": f"{prefix}.body", "body": body})
