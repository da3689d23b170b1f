"""What the simulated users' tests share: a shelf task played move by move, through its episode."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from agent_env import Episode, TurnResult, load_bundle

Moves = Sequence[tuple[list[str], str]]
"""Each turn's books to shelve, then the reply that ends it."""


def played(root: Path, moves: Moves) -> tuple[Episode, list[TurnResult]]:
    """Play the bundle's first train task: each move shelves its books, then ends the turn with its
    reply, until the episode is done; torn down whatever happens."""
    episode = Episode(load_bundle(root).task("train", 0))

    async def main() -> list[TurnResult]:
        ends = []
        try:
            await episode.deploy()
            for books, reply in moves:
                for title in books:
                    await episode.call_tool("put_book", {"title": title})
                ends.append(end := await episode.end_turn(reply))
                if end.done:
                    break
        finally:
            await episode.teardown()
        return ends

    return episode, asyncio.run(main())
