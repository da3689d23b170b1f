"""Tools of the fake tasks the tests serve: typed and documented, as a bundle's are."""

from __future__ import annotations

from typing import Literal


def add_crate(crate: str, bay: int, kind: Literal["dry", "cold"] = "dry") -> str:
    """Store a newly arrived crate in a bay.

    Args:
        crate: The crate's label, such as "C12".
        bay: The bay to store it in.
        kind: What the crate holds.
    """
    return f"stored {kind} crate {crate} in bay {bay}"


def list_crates() -> str:
    """List the crates on the dock."""
    return "C1 in bay 2"


def jam_crane(crate: str) -> str:
    """Lift a crate with the crane, which is jammed.

    Args:
        crate: The crate's label.
    """
    raise RuntimeError(f"the crane is jammed with {crate} half lifted")
