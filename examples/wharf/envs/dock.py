"""The dock: crates stored in six numbered bays, at most four to a bay."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from agent_env import Env, tool

Bay = Annotated[int, Field(ge=1, le=6)]
Kind = Literal["dry", "cold", "fragile"]
BAY_CAPACITY = 4


class Dock(Env):
    """Crates by label, each in a bay and of a kind."""

    def setup(self, seed: Mapping[str, Any]) -> None:
        self.crates: dict[str, dict[str, Any]] = {
            c["crate"]: {"bay": c["bay"], "kind": c.get("kind", "dry")} for c in seed.get("crates", [])
        }

    def items(self) -> list[dict[str, Any]]:
        return [{"crate": label, **crate} for label, crate in sorted(self.crates.items())]

    def _in_bay(self, bay: int) -> list[str]:
        return sorted(label for label, crate in self.crates.items() if crate["bay"] == bay)

    def _room_in(self, bay: int) -> None:
        if len(self._in_bay(bay)) >= BAY_CAPACITY:
            raise ValueError(f"bay {bay} is full ({BAY_CAPACITY} crates)")

    @tool
    def add_crate(self, crate: str, bay: Bay, kind: Kind = "dry") -> str:
        """Store a newly arrived crate in a bay.

        Args:
            crate: The crate's label, such as "C12".
            bay: The bay to store it in, from 1 to 6.
            kind: What the crate holds.
        """
        if crate in self.crates:
            raise ValueError(f"crate {crate} is already in bay {self.crates[crate]['bay']}")
        self._room_in(bay)
        self.crates[crate] = {"bay": bay, "kind": kind}
        return f"crate {crate} ({kind}) stored in bay {bay}"

    @tool
    def move_crate(self, crate: str, to_bay: Bay) -> str:
        """Move a stored crate to another bay.

        Args:
            crate: The crate's label.
            to_bay: The bay to move it to, from 1 to 6.
        """
        if crate not in self.crates:
            raise ValueError(f"there is no crate {crate} on the dock")
        self._room_in(to_bay)
        self.crates[crate]["bay"] = to_bay
        return f"crate {crate} moved to bay {to_bay}"

    @tool(roles=("harbormaster",))
    def remove_crate(self, crate: str) -> str:
        """Ship a crate out: it leaves the dock.

        Args:
            crate: The crate's label.
        """
        if self.crates.pop(crate, None) is None:
            raise ValueError(f"there is no crate {crate} on the dock")
        return f"crate {crate} shipped"

    @tool
    def list_crates(self, bay: Bay | None = None) -> list[dict[str, Any]]:
        """List the crates on the dock, or in one bay.

        Args:
            bay: Only this bay's crates; every bay when omitted.
        """
        return [c for c in self.items() if bay is None or c["bay"] == bay]
