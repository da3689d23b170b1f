"""What can go wrong reaching a server, each error saying how to fix it (`agent_env.client`
and `agent_env.training.trl` export them)."""

from __future__ import annotations

from agent_env._errors import AgentEnvError


class ServerUnavailableError(AgentEnvError, ConnectionError):
    """No agent_env server answers at the URL (or what answers is not one)."""


class ServerAtCapacityError(AgentEnvError, RuntimeError):
    """The server holds as many sessions as it may: it refused this one."""


class UnknownSplitError(AgentEnvError, ValueError):
    """The server serves no split of that name."""


class CurriculumError(AgentEnvError, ValueError):
    """The server's online curriculum refused a request: a group it never drew, a run it does not
    hold, a policy other than the run's, a saved state that is not one."""
