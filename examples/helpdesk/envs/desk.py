"""The helpdesk's records: accounts (locked or not) and orders (refunded or not), found by the customer's
name. Only a lookup tells the agent an account's username or an order's number."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_env import Env, tool


class Desk(Env):
    """Each customer's account and order; the lookups made, for the verifiers."""

    def setup(self, seed: Mapping[str, Any]) -> None:
        self.accounts: dict[str, dict[str, Any]] = {a["username"]: dict(a) for a in seed.get("accounts", [])}
        self.orders: dict[str, dict[str, Any]] = {o["order"]: dict(o) for o in seed.get("orders", [])}
        self.lookups: list[dict[str, str]] = []

    def items(self) -> list[dict[str, Any]]:
        accounts = [{"username": name, "locked": a["locked"]} for name, a in sorted(self.accounts.items())]
        orders = [{"order": number, "refunded": o["refunded"]} for number, o in sorted(self.orders.items())]
        return accounts + orders

    @tool
    def find_user(self, name: str) -> str:
        """The username of a customer's account.

        Args:
            name: The customer's full name.
        """
        self.lookups.append({"tool": "find_user", "name": name})
        for username, account in self.accounts.items():
            if account["name"] == name:
                return username
        raise ValueError(f"no customer named {name}")

    @tool
    def unlock_account(self, username: str) -> str:
        """Unlock an account.

        Args:
            username: The account's username, as find_user gives it.
        """
        if username not in self.accounts:
            raise ValueError(f"no account {username}")
        self.accounts[username]["locked"] = False
        return "unlocked"

    @tool
    def find_order(self, name: str) -> str:
        """The number of a customer's order.

        Args:
            name: The customer's full name.
        """
        self.lookups.append({"tool": "find_order", "name": name})
        for number, order in self.orders.items():
            if order["customer"] == name:
                return number
        raise ValueError(f"no order for {name}")

    @tool
    def refund_order(self, order: str) -> str:
        """Refund an order.

        Args:
            order: The order's number, as find_order gives it.
        """
        if order not in self.orders:
            raise ValueError(f"no order {order}")
        self.orders[order]["refunded"] = True
        return "refunded"
