"""Simulated users: a task's next user message from the bundle's `users.py`, or from a chat model.

The chat model's user needs the `users` extra (the `openai` client), imported only when it answers.
What a user function is handed, `agent_env.UserContext`, is the episode's: it lives with the engine.
"""

from __future__ import annotations

import typing as _typing

from agent_env._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from agent_env._contracts.users import STOP as STOP, UserFunction as UserFunction, UserModel as UserModel
    from agent_env.users._simulated import SimulatedUser as SimulatedUser
else:
    _lazy_exports(
        __name__,
        {
            "agent_env._contracts.users": ["STOP", "UserFunction", "UserModel"],
            "agent_env.users._simulated": ["SimulatedUser"],
        },
    )
