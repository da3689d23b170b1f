"""What the fleet's tests share: what each server holds, a reference play as TRL plays it, and a
process the factory is pickled into."""

from __future__ import annotations

from typing import Any

import httpx

from agent_env.training.trl import ToolCallError
from tst.support.wharf import reference_play

STORE_TASK_ID = "store-crate-000"


def held(url: str, token: str | None = None) -> int:
    """The sessions the server at `url` holds now, as its `/status` says."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    status = httpx.get(f"{url}/wharf/status", headers=headers, timeout=10).json()
    return int(status["sessions"]["held"])


def play_store(environment: Any) -> tuple[float | None, int]:
    """The reference play of `store-crate-000` on the episode reset last, as TRL plays a rollout: a
    call that fails is shown to the model as the tool's error, not raised. The reward, and how many
    calls failed."""
    failed = 0
    for turn in reference_play(STORE_TASK_ID).turns:
        for call in [*((c.tool, c.arguments) for c in turn.all_calls), ("end_turn", {"reply": turn.reply})]:
            try:
                getattr(environment, call[0])(**call[1])
            except ToolCallError:
                failed += 1
    return environment.get_reward(), failed


def play_three(factory: Any, row: dict[str, Any], urls: list[str]) -> tuple[list[int], list[float | None]]:
    """What a process the factory was pickled into sees: three environments reset, what each server
    then holds, and each one's reward once played."""
    environments = [factory() for _ in range(3)]
    for environment in environments:
        environment.reset(**row)
    holding = [held(url) for url in urls]
    return holding, [play_store(environment)[0] for environment in environments]


PLAY_THREE = (
    "import json, pickle, sys; from tst.integration._fleet import play_three; "
    "print(json.dumps(play_three(*pickle.load(sys.stdin.buffer))))"
)
"""`python -c PLAY_THREE`, from the repository's root, with `pickle.dumps((factory, row, urls))` on
its stdin: `play_three` in a process of its own, printed as JSON."""
