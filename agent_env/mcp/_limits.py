"""The cap on what an MCP server may answer: `max_result_bytes` per message, read no further.

A message over it is dropped as it arrives, never held, and the call it answers gets a JSON-RPC error
with the code `TOO_LARGE` in its place, which the env words as a `TOOL_ERROR`: the server is still
there, so the episode goes on. Over stdio the transport (`_stdio.py`) reads each line to the cap; over
streamable HTTP `CappedTransport` reads each response's body to it, counting the bytes it decompresses
to (a gzip bomb of 900 KB is 900 MB of answer), and each event of a GET stream (the messages the
server starts, or a call's answer resumed after its POST's stream broke off).

What a server sends is made valid Unicode before the SDK parses it (`_unicode.valid_json`: a lone
surrogate, which pydantic's parser refuses along with the whole message, becomes U+FFFD); an answer
that still cannot be read is the error `UNREADABLE` for its call, at once, rather than no answer.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

import httpx
from mcp import types

from agent_env._errors import AgentEnvError
from agent_env._unicode import valid_json
from agent_env.mcp._log import ServerLog

TOO_LARGE = -32001
"""The JSON-RPC error code a call gets in place of an answer over the cap."""
UNREADABLE = -32002
"""The JSON-RPC error code a call gets in place of an answer that is not a JSON-RPC message."""
LOCAL = "agent_env"
"""The `data` of the errors made here, which tells them from a server's own of the same code."""
ACCEPTED_ENCODINGS = "gzip, deflate"
"""The content encodings asked for: those decoded here, bounded (httpx would also ask for brotli)."""

RequestId = str | int

_EVENT_END = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")
"""A blank line, which ends a server-sent event."""


def too_large(request: RequestId, max_bytes: int) -> types.JSONRPCError:
    """What the call `request` gets in place of an answer over `max_bytes`."""
    return local_error(request, TOO_LARGE, f"an answer over {max_bytes} bytes was dropped unread")


def local_error(request: RequestId, code: int, message: str) -> types.JSONRPCError:
    """A JSON-RPC error for the call `request`, made here (`LOCAL`) in place of the server's answer."""
    error = types.ErrorData(code=code, message=message, data=LOCAL)
    return types.JSONRPCError(jsonrpc="2.0", id=request, error=error)


class StreamClosedError(AgentEnvError):
    """A GET stream closed here: an event over the cap, or a body that does not decode."""


class _UndecodableError(AgentEnvError):
    """A body in a content encoding this transport did not ask for, or that does not decode."""


class _Decoder:
    """A body's bytes as its content encoding decodes them, no more at a time than asked for."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding.strip().lower()
        self._raw = b""
        self._first = True
        self._zlib: zlib._Decompress | None = None
        if self._encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self._encoding == "deflate":
            self._zlib = zlib.decompressobj()
        elif self._encoding not in ("", "identity"):
            raise _UndecodableError(f"in the content encoding {encoding!r}, which was not asked for")

    @property
    def holding(self) -> bool:
        """Whether input is left that the last call did not decode (it had made as much as asked)."""
        return bool(self._raw)

    def decode(self, raw: bytes, at_most: int) -> bytes:
        """`raw` (after what was left), decoded to at most `at_most + 1` bytes; the rest is kept."""
        data, self._raw = self._raw + raw, b""
        if self._zlib is None:
            self._raw = data[at_most + 1 :]
            return data[: at_most + 1]
        try:
            out = self._zlib.decompress(data, at_most + 1)
        except zlib.error as exc:
            if self._encoding != "deflate" or not self._first:
                raise _UndecodableError(f"that does not decode as {self._encoding} ({exc})") from None
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate without its zlib header
            out = self._zlib.decompress(data, at_most + 1)
        self._first = False
        self._raw = self._zlib.unconsumed_tail
        return out


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx's transport, with each POST's response (the answer to one message, JSON or a stream of
    events that ends with it) read whole, decoded, up to `max_bytes` before the SDK sees it; one over
    is closed there and answered with `too_large` for the request's id (a DELETE's, with nothing).
    Each GET's response (a stream of events) is passed on an event at a time, each up to `max_bytes`.
    `log` is the server's."""

    def __init__(self, max_bytes: int, *, log: ServerLog) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._max_bytes = max_bytes
        self._log = log

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = ACCEPTED_ENCODINGS
        response = await self._inner.handle_async_request(request)
        if request.method == "GET":
            return self._events(request, response)
        try:  # a POST's answer; or a DELETE's (the session's end), which the SDK reads whole too
            body = await self._body(response)
        except _UndecodableError as exc:
            why = f"answered with a body {exc}"
            body, instead = None, lambda id: local_error(id, UNREADABLE, why)
        else:
            instead = lambda id: too_large(id, self._max_bytes)  # noqa: E731
        finally:
            await response.aclose()
        if body is not None:
            return httpx.Response(response.status_code, headers=_plain(response), content=self._valid(body))
        if request.method != "POST":
            return httpx.Response(response.status_code, headers=_plain(response))  # its body dropped
        return _instead(request, instead)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def _body(self, response: httpx.Response) -> bytes | None:
        """The whole body, decoded; None once it is over `max_bytes` (the rest unread)."""
        decoder = _Decoder(response.headers.get("content-encoding", ""))
        body = bytearray()
        async for raw in response.stream:  # type: ignore[union-attr]
            body += decoder.decode(raw, self._max_bytes - len(body))
            if len(body) > self._max_bytes:
                return None
        while decoder.holding:  # only when the last decode made as much as it was asked for
            body += decoder.decode(b"", self._max_bytes - len(body))
            if len(body) > self._max_bytes:
                return None
        return bytes(body)

    def _events(self, request: httpx.Request, response: httpx.Response) -> httpx.Response:
        """The GET's response, its body passed on an event at a time (`_capped_events`)."""
        resumed = "last-event-id" in request.headers
        stream = _Events(self._capped_events(response, resumed=resumed), response.aclose)
        return httpx.Response(
            response.status_code, headers=_plain(response), stream=stream, extensions=response.extensions
        )

    async def _capped_events(self, response: httpx.Response, *, resumed: bool) -> AsyncGenerator[bytes, None]:
        """Each whole event of the body, decoded and made valid Unicode, each up to `max_bytes`. One
        over ends the stream: a resumed one (a call's answer) with `too_large` as its last event, which
        the SDK hands to the call it resumes; the stream of messages the server starts by raising, so
        that the SDK opens it again only as often as it retries a broken one."""
        try:
            decoder = _Decoder(response.headers.get("content-encoding", ""))
        except _UndecodableError as exc:
            self._log.say_once("GET undecodable", f"sent a GET stream {exc}: it was closed")
            raise StreamClosedError(f"a GET stream {exc}") from None
        pending = bytearray()
        scanned = 0
        async for raw in response.stream:  # type: ignore[union-attr]
            data = raw
            while data or decoder.holding:
                try:
                    pending += decoder.decode(data, self._max_bytes - len(pending))
                except _UndecodableError as exc:
                    self._log.say_once("GET undecodable", f"sent a GET stream {exc}: it was closed")
                    raise StreamClosedError(f"a GET stream {exc}") from None
                data = b""
                while (end := _EVENT_END.search(pending, max(0, scanned - 3))) is not None:
                    event = bytes(pending[: end.end()])
                    del pending[: end.end()]
                    scanned = 0
                    yield self._valid(event)
                scanned = len(pending)
                if len(pending) > self._max_bytes:
                    async for event in self._over(resumed=resumed):
                        yield event
                    return
        if pending:
            yield self._valid(bytes(pending))

    async def _over(self, *, resumed: bool) -> AsyncGenerator[bytes, None]:
        """What a GET stream ends with once an event goes over the cap."""
        if resumed:
            answer = too_large(0, self._max_bytes).model_dump_json(by_alias=True, exclude_none=True)
            yield b"event: message\ndata: " + answer.encode() + b"\n\n"
            return
        self._log.say_once(
            "GET over",
            f"sent a message over its max_result_bytes of {self._max_bytes} bytes on its GET stream "
            "(the messages it starts, which answer no call): the stream was closed, the message "
            "dropped unread",
        )
        raise StreamClosedError(f"a GET stream's event went over {self._max_bytes} bytes")

    def _valid(self, body: bytes) -> bytes:
        """`body` made valid Unicode (`valid_json`), which the log says once a server."""
        valid = valid_json(body)
        if valid is not body:
            self._log.not_unicode()
        return valid


class _Events(httpx.AsyncByteStream):
    """A response's body as `_capped_events` yields it; closing it closes the server's response."""

    def __init__(self, events: AsyncGenerator[bytes, None], close: Callable[[], Awaitable[None]]) -> None:
        self._events = events
        self._close = close

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for event in self._events:
            yield event

    async def aclose(self) -> None:
        await self._events.aclose()
        await self._close()


def _instead(request: httpx.Request, answer: Callable[[RequestId], types.JSONRPCError]) -> httpx.Response:
    """The response the SDK reads in place of the server's: `answer` for the POST's request id; nothing
    (202) for a notification, which no call waits for."""
    try:
        request_id = json.loads(request.content)["id"]
    except (ValueError, TypeError, KeyError):
        request_id = None
    if not isinstance(request_id, str | int):
        return httpx.Response(202)
    content = answer(request_id).model_dump_json(by_alias=True, exclude_none=True).encode()
    return httpx.Response(200, headers=[("content-type", "application/json")], content=content)


def _plain(response: httpx.Response) -> list[tuple[str, str]]:
    """The response's headers, less those of its body as it came (its length, how it was encoded)."""
    dropped = ("content-length", "transfer-encoding", "content-encoding")
    return [(name, value) for name, value in response.headers.multi_items() if name.lower() not in dropped]
