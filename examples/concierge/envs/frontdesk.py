"""The front desk's bookings, found by the guest's name: a room, the nights, whether breakfast is
included, and the check-in time. Only a lookup tells the concierge a booking's details."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_env import Env, tool


class Frontdesk(Env):
    """The hotel's bookings, by guest name."""

    def setup(self, seed: Mapping[str, Any]) -> None:
        self.bookings: dict[str, dict[str, Any]] = {b["guest"]: dict(b) for b in seed.get("bookings", [])}

    @tool
    def find_booking(self, guest: str) -> str:
        """A guest's booking: room, nights, breakfast and check-in time, as JSON.

        Args:
            guest: The guest's full name.
        """
        booking = self.bookings.get(guest)
        if booking is None:
            raise ValueError(f"no booking for {guest}")
        return json.dumps(booking, sort_keys=True)
