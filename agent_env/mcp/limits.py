"""The cap on what an MCP server may answer: `max_result_bytes` per message, read no further.

A message over it is dropped as it arrives, never held, and the call it answers gets a JSON-RPC error
with the code `TOO_LARGE` in its place, which the env words as a `TOOL_ERROR`: the server is still
there, so the episode goes on. Over stdio the transport (`stdio.py`) reads each line to the cap; over
streamable HTTP `CappedTransport` reads each response's body to it.
"""

from __future__ import annotations

import json

import httpx
from mcp import types

TOO_LARGE = -32001
"""The JSON-RPC error code a call gets in place of an answer over the cap."""

RequestId = str | int


def too_large(request: RequestId, max_bytes: int) -> types.JSONRPCError:
    """What the call `request` gets in place of an answer over `max_bytes`."""
    error = types.ErrorData(code=TOO_LARGE, message=f"an answer over {max_bytes} bytes was dropped unread")
    return types.JSONRPCError(jsonrpc="2.0", id=request, error=error)


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx's transport, with each POST's response (the answer to one message, JSON or a stream of
    events that ends with it) read whole up to `max_bytes` before the SDK sees it; one over is closed
    there and answered with `too_large` for the request's id. The GET stream (messages the server
    starts) passes as it is."""

    def __init__(self, max_bytes: int) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._max_bytes = max_bytes

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        if request.method != "POST":
            return response
        body = bytearray()
        try:
            async for chunk in response.stream:  # type: ignore[union-attr]
                body += chunk
                if len(body) > self._max_bytes:
                    break
        finally:
            await response.aclose()
        headers = [
            (name, value)
            for name, value in response.headers.multi_items()
            if name.lower() not in ("content-length", "transfer-encoding")
        ]
        if len(body) <= self._max_bytes:
            return httpx.Response(response.status_code, headers=headers, content=bytes(body))
        try:
            request_id = json.loads(request.content)["id"]
        except (ValueError, TypeError, KeyError):
            return httpx.Response(202)  # not a request: nothing waits for its answer
        kept = [(n, v) for n, v in headers if n.lower() not in ("content-type", "content-encoding")]
        answer = too_large(request_id, self._max_bytes).model_dump_json(by_alias=True, exclude_none=True)
        return httpx.Response(
            200, headers=[*kept, ("content-type", "application/json")], content=answer.encode()
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
