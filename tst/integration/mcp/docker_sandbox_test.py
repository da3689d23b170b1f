"""An MCP env beside a Docker sandbox: the server runs on this host, so it works in a folder of its own
(the sandbox's folder is in its container), and both are gone after the teardown."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agent_env import Episode, load_bundle
from tst.support.mcp_bundles import a_notes_task, notes_bundle, stdio_server
from tst.support.waiting import alive, until


def test_a_stdio_server_beside_a_docker_sandbox_works_in_a_folder_of_its_own(tmp_path: Path) -> None:
    task = a_notes_task(files={"shopping.txt": "milk\n"})
    root = notes_bundle(tmp_path, stdio_server(), tasks=[task], agent='envs = ["notes"]\nbash = true')
    episode = Episode(load_bundle(root).task("train", 0), provider="docker")

    async def main() -> tuple[dict[str, Any], str]:
        try:
            await episode.deploy()
            where = json.loads(await episode.call_tool("where", {}))
            return where, await episode.call_tool("bash", {"command": "cat shopping.txt"})
        finally:
            await episode.teardown()

    where, listed = asyncio.run(main())

    assert Path(where["cwd"]).name.startswith("agent-env-mcp-notes-")
    assert where["files"] == []
    assert listed.startswith("milk")
    assert not Path(where["cwd"]).exists()
    assert until(lambda: not alive(where["pid"]))
