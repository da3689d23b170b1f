"""The pantry: stores by item, in whole quantities."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from agent_env import Env, tool

Quantity = Annotated[int, Field(ge=1)]


class Pantry(Env):
    """How much of each item the galley has."""

    def setup(self, seed: Mapping[str, Any]) -> None:
        self.stock: dict[str, int] = dict(seed.get("stock", {}))

    def items(self) -> list[dict[str, Any]]:
        return [{"item": item, "quantity": n} for item, n in sorted(self.stock.items()) if n > 0]

    @tool
    def add_item(self, item: str, quantity: Quantity) -> str:
        """Put some of an item into the pantry.

        Args:
            item: The item's name, in lower case, such as "flour".
            quantity: How many units to add.
        """
        self.stock[item] = self.stock.get(item, 0) + quantity
        return f"{item}: {self.stock[item]}"

    @tool
    def use_item(self, item: str, quantity: Quantity) -> str:
        """Take some of an item out of the pantry.

        Args:
            item: The item's name.
            quantity: How many units to take.
        """
        have = self.stock.get(item, 0)
        if have < quantity:
            raise ValueError(f"only {have} of {item} in the pantry")
        self.stock[item] = have - quantity
        return f"{item}: {self.stock[item]}"

    @tool
    def check_stock(self, item: str | None = None) -> dict[str, int]:
        """See how much of each item (or of one item) the pantry holds.

        Args:
            item: Only this item; every item when omitted.
        """
        if item is not None:
            return {item: self.stock.get(item, 0)}
        return {k: v for k, v in sorted(self.stock.items()) if v > 0}
