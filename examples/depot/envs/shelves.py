"""The depot's shelves: boxes by label, each on one of nine shelves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from agent_env import Env, tool

Shelf = Annotated[int, Field(ge=1, le=9)]


class Shelves(Env):
    """Which shelf each box is on."""

    def setup(self, seed: Mapping[str, Any]) -> None:
        self.boxes: dict[str, int] = {box["box"]: box["shelf"] for box in seed.get("boxes", [])}

    def items(self) -> list[dict[str, Any]]:
        return [{"box": label, "shelf": shelf} for label, shelf in sorted(self.boxes.items())]

    @tool
    def store(self, box: str, shelf: Shelf) -> str:
        """Put a new box on a shelf.

        Args:
            box: The box's label.
            shelf: The shelf, from 1 to 9.
        """
        if box in self.boxes:
            raise ValueError(f"box {box} is already on shelf {self.boxes[box]}")
        self.boxes[box] = shelf
        return "ok"

    @tool
    def move(self, box: str, shelf: Shelf) -> str:
        """Move a box to another shelf.

        Args:
            box: The box's label.
            shelf: The shelf to move it to, from 1 to 9.
        """
        if box not in self.boxes:
            raise ValueError(f"there is no box {box}")
        self.boxes[box] = shelf
        return "ok"

    @tool
    def ship(self, box: str) -> str:
        """Send a box out of the depot.

        Args:
            box: The box's label.
        """
        if self.boxes.pop(box, None) is None:
            raise ValueError(f"there is no box {box}")
        return "ok"
