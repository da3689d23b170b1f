"""A counter whose one tool does next to nothing, so what is measured is everything around it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_env import Env, tool


class Counter(Env):
    """Counts pings."""

    def setup(self, seed: Mapping[str, Any]) -> None:
        self.pings = 0

    def items(self) -> list[int]:
        return [self.pings]

    @tool
    def ping(self, value: int) -> int:
        """Answer with the value sent.

        Args:
            value: Any whole number.
        """
        self.pings += 1
        return value
