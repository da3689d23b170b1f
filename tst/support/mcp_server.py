"""A small MCP server the tests start, written with the MCP SDK: notes kept in memory, and ways to fail.

    python mcp_server.py                   stdio: the notes server
    python mcp_server.py --http            streamable HTTP on a free loopback port, printed first as `port N`
    python mcp_server.py --hang-at-start   never answers (it sleeps before it reads anything)
    python mcp_server.py --exit-at-start   says why on stderr and exits with code 2
    python mcp_server.py --malformed       lists a tool whose input schema is not a JSON Schema
    python mcp_server.py --dashed          the notes server, with a tool named `count-notes` too
    python mcp_server.py --hostile TOOLS   stdio, written by hand (raw JSON-RPC lines, no SDK): `echo`
                                           and the hostile tools named (comma-separated; `HOSTILE_TOOLS`)
    python mcp_server.py --http-hostile    the HTTP notes server behind `Hostile`: a GET stream that
                                           floods, and answers no SDK would send (`Hostile`)

The task's seed arrives as JSON in AGENT_ENV_SEED: {"notes": [...]}.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import zlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any

from mcp.server.fastmcp import Context, FastMCP
from pydantic import Field

CRASH_MESSAGE = "fatal: the notes store is corrupt"
FAN_OUT_LEVELS = 20
"""How many `$defs` levels `deep`'s schema has, each referring to the one below twice: about 2 KB of
JSON that, inlined, would be 2**20 copies of its leaf."""
SLOW_PATTERN = "(a+)+$"
"""A pattern a backtracking engine takes twice as long to fail for each `a` before a `!`."""
SLOW_NAMES = "^(b+)+$"
"""`match`'s pattern of property names (patternProperties), as slow to a backtracking engine."""
LONE_SURROGATE = "\ud800"
SHAPED_CODE = "a" * 26 + "!"
"""What `shaped` answers as its structured content's `code`, which its output schema's pattern backtracks
on: about 10 s for Python's `re`."""


def notes_server(*, dashed: bool = False, hostile: bool = False) -> FastMCP:
    notes: list[str] = list(json.loads(os.environ.get("AGENT_ENV_SEED") or "{}").get("notes", []))
    server = FastMCP("notes", log_level="WARNING")

    @server.tool()
    def add_note(text: Annotated[str, Field(description="The note's text.")]) -> str:
        """Add a note."""
        notes.append(text)
        return f"noted: {text}"

    @server.tool()
    def list_notes() -> list[str]:
        """Every note, oldest first."""
        return list(notes)

    @server.tool()
    def fail(reason: Annotated[str, Field(description="What to fail with.")]) -> str:
        """Fail with the reason given."""
        raise ValueError(reason)

    @server.tool()
    def crash() -> str:
        """Exit at once, as a server that crashes does."""
        print(CRASH_MESSAGE, file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool()
    def hang() -> str:
        """Never answer."""
        time.sleep(3600)
        return "late"

    @server.tool()
    def start_helper() -> int:
        """Start a helper process that runs until it is killed; its pid."""
        return subprocess.Popen(["sleep", "600"]).pid

    @server.tool()
    def orphan_and_hang(marker: Annotated[str, Field(description="sleep's argument, to find it by.")]) -> str:
        """Start `sleep MARKER` in a session of its own (out of the server's group and session), then
        never answer."""
        subprocess.Popen(["setsid", "sleep", marker], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        time.sleep(3600)
        return "late"

    @server.tool()
    def big(
        megabytes: Annotated[int, Field(description="How many MiB of text to answer.")],
        touch: Annotated[str, Field(description="A file to make once called, if any.")] = "",
    ) -> str:
        """Answer `megabytes` MiB of text (making `touch` first, so a test knows the answer is coming)."""
        if touch:
            open(touch, "w").close()
        return "x" * (megabytes << 20)

    @server.tool()
    def where() -> dict[str, Any]:
        """The server's working folder, the files in it, and its pid."""
        return {"cwd": os.getcwd(), "files": sorted(os.listdir()), "pid": os.getpid()}

    @server.tool()
    def session(ctx: Context) -> str:  # type: ignore[type-arg]
        """Which MCP session asks: one per client connection."""
        return hex(id(ctx.session))

    if hostile:  # listed as any tool; `Hostile` answers their calls before the server sees them
        for name in ANSWERED_BY_HOSTILE:
            server.tool(name=name, description=f"Answered by Hostile: {name}.")(lambda: "unreached")

    if dashed:

        @server.tool(name="count-notes")
        def count_notes() -> int:
            """How many notes there are."""
            return len(notes)

    return server


def malformed_server() -> None:
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    server: Server[Any, Any] = Server("broken")

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def tools() -> list[types.Tool]:
        schema = {"type": "object", "properties": {"text": {"type": "strang"}}}
        return [types.Tool(name="add_note", description="Add a note.", inputSchema=schema)]

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def fan_out_schema(levels: int) -> dict[str, Any]:
    """An object schema whose argument `tree` is `$defs` level `levels`, each level an object of two
    properties that both refer to the level below."""
    defs: dict[str, Any] = {"L0": {"type": "string"}}
    for level in range(1, levels + 1):
        below = {"$ref": f"#/$defs/L{level - 1}"}
        defs[f"L{level}"] = {"type": "object", "properties": {"left": below, "right": below}}
    return {"type": "object", "$defs": defs, "properties": {"tree": {"$ref": f"#/$defs/L{levels}"}}}


def _tool(name: str, description: str, properties: dict[str, Any], **schema: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, **schema},
    }


_TEXT = {"text": {"type": "string", "description": "Some text."}}
HOSTILE_TOOLS: dict[str, dict[str, Any]] = {
    "echo": _tool("echo", "Answer the text given.", _TEXT, required=["text"]),
    "deep": {"name": "deep", "description": "A $ref fan-out.", "inputSchema": fan_out_schema(FAN_OUT_LEVELS)},
    "match": _tool(
        "match",
        "Answer the word given, once it matches a pattern that backtracks.",
        {"word": {"type": "string", "pattern": SLOW_PATTERN, "description": "A word."}},
        patternProperties={SLOW_NAMES: {"type": "integer"}},
        additionalProperties=False,
    ),
    "lookahead": _tool(
        "lookahead",
        "Answer the word given; its pattern has a lookahead, which RE2 cannot compile.",
        {"word": {"type": "string", "pattern": "^(?!x)", "description": "A word not starting with x."}},
    ),
    "surrogate": _tool("surrogate", "Answer text with a lone surrogate in it.", {}),
    "garbled": _tool("garbled", "Answer with a line that is not JSON-RPC, naming the call.", {}),
    "shaped": {
        **_tool("shaped", "Answer structured content its output schema's pattern backtracks on.", {}),
        "outputSchema": {
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": SLOW_PATTERN}},
        },
    },
    "bad_name": _tool(f"bad{LONE_SURROGATE}name", "A tool whose name has a lone surrogate.", {}),
    "bad_description": _tool("described", f"A description with a lone surrogate: {LONE_SURROGATE}.", {}),
}
"""The tools `--hostile` lists, by the name the command line gives."""


def hostile_server(names: list[str]) -> None:
    """A stdio server written by hand, one JSON-RPC message a line (`json.dumps` escapes a lone
    surrogate as `\\ud800`, as a JavaScript server's JSON.stringify does): `echo` and the tools named."""
    tools = [HOSTILE_TOOLS["echo"], *(HOSTILE_TOOLS[name] for name in names)]
    print("hostile server ready (a banner on stdout, which is no message)", flush=True)

    def answer(request: int | str, result: dict[str, Any]) -> None:
        print(json.dumps({"jsonrpc": "2.0", "id": request, "result": result}), flush=True)

    for line in sys.stdin:
        message = json.loads(line)
        method, request = message.get("method"), message.get("id")
        if request is None:
            continue
        if method == "initialize":
            info = {"name": "hostile", "version": "1"}
            version = message["params"]["protocolVersion"]
            answer(request, {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info})
        elif method == "tools/list":
            answer(request, {"tools": tools})
        elif method == "tools/call":
            name, arguments = message["params"]["name"], message["params"].get("arguments") or {}
            if name == "garbled":
                print(
                    f'{{"jsonrpc": "2.0", "id": {json.dumps(request)}, "result": {{"content": [', flush=True
                )
                continue
            if name == "shaped":
                structured = {"code": SHAPED_CODE}
                answer(
                    request,
                    {
                        "content": [{"type": "text", "text": json.dumps(structured)}],
                        "structuredContent": structured,
                    },
                )
                continue
            text = f"a{LONE_SURROGATE}b" if name == "surrogate" else json.dumps(arguments, sort_keys=True)
            answer(request, {"content": [{"type": "text", "text": text}]})
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": request, "result": {}}), flush=True)


DEFLATED = "a plain answer, deflated " * 1000
BOMB_BYTES = 64 << 20
"""What `bomb`'s gzip-compressed answer holds once decompressed: 64 MiB (about 64 KiB compressed)."""
FLOOD_BYTES = 64 << 20
"""How much a GET stream of `Hostile` sends, at most, in one event that never ends."""
ANSWERED_BY_HOSTILE = ("bomb", "deflated", "brotli", "resumable", "garbled", "surrogate")
"""The tools of `--http-hostile` whose calls `Hostile` answers; `flood` is the server's own."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Hostile:
    """ASGI middleware before the HTTP notes server that answers as no SDK server would: each GET (the
    stream of messages the server starts, or one resumed with Last-Event-ID) is one event of
    `FLOOD_BYTES` that never ends until the client hangs up, and so is the answer to a DELETE (the
    session's end); `bomb` answers a gzip bomb, `deflated` text (`DEFLATED`) compressed with deflate,
    `brotli` a body in an encoding no client asked for, `resumable` an SSE stream that ends before its
    answer (so the client resumes it with a GET), `garbled` JSON cut short, `surrogate` text with a lone
    surrogate. `flood` (a tool of the server) tells what each of those floods sent before its client
    hung up."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        self.streams: list[dict[str, Any]] = []
        self._bomb: tuple[bytes, Any] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] in ("GET", "DELETE"):
            await self._flood(scope, receive, send)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            part = await receive()
            body += part.get("body", b"")
            if not part.get("more_body"):
                break
        message = json.loads(body)
        name = message.get("params", {}).get("name") if message.get("method") == "tools/call" else None
        if name in ANSWERED_BY_HOSTILE:
            await self._answer(name, message["id"], send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _answer(self, name: str, request: int | str, send: Send) -> None:
        headers = [(b"content-type", b"application/json")]
        if name == "bomb":
            body, headers = self._gzip_bomb(request), [*headers, (b"content-encoding", b"gzip")]
        elif name == "deflated":
            content = {"content": [{"type": "text", "text": DEFLATED}]}
            body = zlib.compress(json.dumps({"jsonrpc": "2.0", "id": request, "result": content}).encode())
            headers = [*headers, (b"content-encoding", b"deflate")]
        elif name == "brotli":
            body, headers = b"\x0b\x02\x80{}\x03", [*headers, (b"content-encoding", b"br")]
        elif name == "resumable":
            headers = [(b"content-type", b"text/event-stream")]
            body = b"retry: 50\nid: primed\ndata: \n\n"
        elif name == "garbled":
            body = b'{"jsonrpc": "2.0", "id": ' + json.dumps(request).encode() + b', "result": {"content": ['
        else:
            text = f"a{LONE_SURROGATE}b"
            content = {"content": [{"type": "text", "text": text}]}
            body = json.dumps({"jsonrpc": "2.0", "id": request, "result": content}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _gzip_bomb(self, request: int | str) -> bytes:
        """A JSON-RPC answer to `request` of `BOMB_BYTES` of text, gzip-compressed: its start is
        compressed once, and each answer ends it with its own id."""
        if self._bomb is None:
            start = b'{"jsonrpc": "2.0", "result": {"content": [{"type": "text", "text": "'
            packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            chunk = b"x" * (1 << 20)
            parts = [packer.compress(start), *(packer.compress(chunk) for _ in range(BOMB_BYTES >> 20))]
            self._bomb = (b"".join(parts), packer)
        compressed, packer = self._bomb
        end = packer.copy()
        return compressed + end.compress(b'"}]}, "id": ' + json.dumps(request).encode() + b"}") + end.flush()

    async def _flood(self, scope: Scope, receive: Receive, send: Send) -> None:
        import anyio

        resumed = any(name.lower() == b"last-event-id" for name, _ in scope["headers"])
        stream = {"method": scope["method"], "resumed": resumed, "sent": 0, "hung_up": False}
        self.streams.append(stream)
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        chunk = b"x" * (64 << 10)

        async def watch(scope: anyio.CancelScope) -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            stream["hung_up"] = True
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(watch, group.cancel_scope)
            await send({"type": "http.response.body", "body": b"data: ", "more_body": True})
            while stream["sent"] < FLOOD_BYTES:
                # uvicorn drops what is sent once its client hung up, without waiting: so look between sends
                await anyio.lowlevel.checkpoint()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                stream["sent"] += len(chunk)
            await send({"type": "http.response.body", "body": b"\n\n"})
            group.cancel_scope.cancel()


def serve_http(*, hostile: bool = False) -> None:
    import uvicorn

    server = notes_server(hostile=hostile)
    app: Any = server.streamable_http_app()
    if hostile:
        app = middleware = Hostile(app)

        @server.tool()
        def flood() -> list[dict[str, Any]]:
            """What each GET stream sent before its client hung up."""
            return middleware.streams

    listening = socket.create_server(("127.0.0.1", 0))
    print(f"port {listening.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[listening])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "--hang-at-start":
        time.sleep(3600)
    elif mode == "--exit-at-start":
        print("cannot open the notes store", file=sys.stderr, flush=True)
        sys.exit(2)
    elif mode == "--malformed":
        malformed_server()
    elif mode == "--http":
        serve_http()
    elif mode == "--http-hostile":
        serve_http(hostile=True)
    elif mode == "--hostile":
        hostile_server([name for name in sys.argv[2].split(",") if name] if len(sys.argv) > 2 else [])
    else:
        notes_server(dashed=mode == "--dashed").run()
