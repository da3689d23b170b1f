"""A small MCP server the tests start, written with the MCP SDK: notes kept in memory, and ways to fail.

    python mcp_server.py                   stdio: the notes server
    python mcp_server.py --http            streamable HTTP on a free loopback port, printed first as `port N`
    python mcp_server.py --hang-at-start   never answers (it sleeps before it reads anything)
    python mcp_server.py --exit-at-start   says why on stderr and exits with code 2
    python mcp_server.py --malformed       lists a tool whose input schema is not a JSON Schema
    python mcp_server.py --dashed          the notes server, with a tool named `count-notes` too

The task's seed arrives as JSON in AGENT_ENV_SEED: {"notes": [...]}.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import Annotated, Any

from mcp.server.fastmcp import Context, FastMCP
from pydantic import Field

CRASH_MESSAGE = "fatal: the notes store is corrupt"


def notes_server(*, dashed: bool = False) -> FastMCP:
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


def serve_http() -> None:
    import uvicorn

    app = notes_server().streamable_http_app()
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
    else:
        notes_server(dashed=mode == "--dashed").run()
