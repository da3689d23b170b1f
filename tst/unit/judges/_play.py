"""What the judge verifier's tests share: a bundle of the shelf whose task is judged, asking a stand-in
judge on loopback, and its first train task played through an Episode into its trajectory."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_env import Episode, EpisodeError, Trajectory, TurnResult, load_bundle, trajectory_of
from agent_env.judges import Judging
from tst.support.bundles import SHELF, a_task, make_bundle
from tst.support.judge_stand_in import MODEL

KEY_VARIABLE = "JUDGE_TEST_KEY"
RUBRIC = "Polite: the reply thanks the reader."


def judged_bundle(
    root: Path,
    url: str,
    *,
    verifiers: Sequence[dict[str, Any]] | None = None,
    code: str | None = None,
    **judge: Any,
) -> Path:
    """The shelf bundle with `[judges.tone]` at `url` (its fields replaced by `judge`), and one task
    that puts Dune on the shelf, scored by `verifiers` (default: the judge alone), with `code` as its
    verifiers.py."""
    fields = {"url": url, "model": MODEL, "api_key_env": KEY_VARIABLE, "rubric": RUBRIC, **judge}
    table = "\n".join(f"{name} = {_toml(value)}" for name, value in fields.items() if value is not None)
    toml = (
        textwrap.dedent(
            """
        [agents.reader]
        envs = ["shelf"]
        system_prompt = "You keep the shelf."
        """
        )
        + f"\n[judges.tone]\n{table}\n"
    )
    checks = list(verifiers) if verifiers is not None else [{"type": "judge", "judge": "tone"}]
    tasks = {"train": [a_task(verifiers=checks)]}
    return make_bundle(root, toml=toml, envs={"shelf": SHELF}, tasks=tasks, verifiers=code)


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def played(
    root: Path, reply: str, *, judging: Judging | None = None, prompt_split: str = "train"
) -> tuple[TurnResult | EpisodeError, Trajectory]:
    """Play the bundle's first task: shelve Dune, then end the turn with `reply`; what the end gave
    (its result, or the error that ended the episode) and the trajectory, once torn down."""
    episode = Episode(load_bundle(root).task(prompt_split, 0), judging=judging)

    async def main() -> TurnResult | EpisodeError:
        try:
            await episode.deploy()
            await episode.call_tool("put_book", {"title": "Dune"})
            return await episode.end_turn(reply)
        except EpisodeError as exc:
            return exc
        finally:
            await episode.teardown()
            if judging is not None:
                await judging.aclose()

    end = asyncio.run(asyncio.wait_for(main(), timeout=60))
    return end, trajectory_of(episode)
