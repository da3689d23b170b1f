"""The wire contract, as the server imports it: it lives in `agent_env.client._wire`, which both sides
import (the client's side without agent_env's server)."""

from __future__ import annotations

from agent_env.client._wire import (
    DEADLINE_KEY as DEADLINE_KEY,
    ENDING_CODES as ENDING_CODES,
    ERROR_CODES as ERROR_CODES,
    GROUP_KEY as GROUP_KEY,
    MAX_LABEL_LENGTH as MAX_LABEL_LENGTH,
    AgentEnvAction as AgentEnvAction,
    AgentEnvObservation as AgentEnvObservation,
    AgentEnvState as AgentEnvState,
    CallError as CallError,
    Kind as Kind,
    Phase as Phase,
    SessionCounts as SessionCounts,
    capacity_message as capacity_message,
    held_without_client as held_without_client,
)
