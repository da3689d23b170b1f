"""The client's side of a served bundle, which the trainer's side (`agent_env.training.trl`) and eval
(`agent_env.eval`) both stand on: the session client and the event loop it runs on (`_session`,
`_loop`), the Task API reader (`_taskapi`), each call's deadline (`_deadlines`), one episode as a client
plays it (`_episode`), `end_turn` and the tools as a model is shown them (`_tools`, `_signatures`), what
goes wrong (`_errors`), and the wire contract and bearer token both sides share (`_wire`, `_tokens`: the
server imports them too, as `agent_env.openenv._wire` and `agent_env.openenv._tokens`).

It imports neither TRL nor agent_env's server (`agent_env.openenv`), nor the trainer's side, eval or the
command line; its session and wire types are OpenEnv's client and types. What it exports is what any of
its users may meet: the errors reaching a server raises, and every client's default deadlines. Importing
it loads neither OpenEnv nor the session client.
"""

from __future__ import annotations

from agent_env.client._deadlines import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_RESET_TIMEOUT_S,
    DEFAULT_TOOL_TIMEOUT_S,
)
from agent_env.client._errors import (
    CurriculumError,
    ServerAtCapacityError,
    ServerUnavailableError,
    UnknownSplitError,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_RESET_TIMEOUT_S",
    "DEFAULT_TOOL_TIMEOUT_S",
    "CurriculumError",
    "ServerAtCapacityError",
    "ServerUnavailableError",
    "UnknownSplitError",
]
