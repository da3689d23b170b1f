"""What a verifier and a simulated user see of an episode: the task, its envs, the replies, the events.

A module of its own, above the task: the contexts hold the Task, and the Task holds its verifiers and
its user, which type what they are given with protocols of their own (`ScoringContext`,
`Conversation`) rather than import these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_env._contracts.sandbox import CommandResult, Sandbox
from agent_env._error_types import EpisodeError, ErrorCode
from agent_env._threads import call_maybe_async
from agent_env._tools import Tool
from agent_env._verifiers import EnvInstance, ItemsCheck

if TYPE_CHECKING:
    from agent_env._contracts.judges import Judgements, Seat
    from agent_env._events import EpisodeEvent
    from agent_env._task import Task
    from agent_env._trajectory import TurnRecord


@dataclass(frozen=True)
class VerifierContext:
    """What a verifier sees of a finished episode (and a simulated user of one under way)."""

    task: Task
    envs: Mapping[str, EnvInstance]
    """Each env of the episode by name: a Python env's instance, or an MCP env's `McpEnv`, whose
    tools `call` (from a sync function) and `acall` (from an async one) return their values."""
    replies: tuple[str, ...]
    sandbox: Sandbox | None = None
    events: Sequence[EpisodeEvent] = ()
    """What happened in the episode until its last turn ended, in order (`agent_env._events`)."""
    judging: Judgements | None = None
    """What a `judge` verifier asks through (the server's: its endpoint, cache and bounds); None: the
    process's own (`agent_env.judges._judging.default_judging`)."""
    group_seat: Seat | None = None
    """The episode's place in its GRPO group, where a relative judge scores it beside the group's
    other rollouts; None: judged alone."""

    @property
    def system_prompt(self) -> str | None:
        """The played agent's system prompt, if it has one."""
        return self.task.agent.system_prompt

    @property
    def reply(self) -> str:
        """The reply that ended the last turn."""
        return self.replies[-1] if self.replies else ""

    @property
    def turns(self) -> list[TurnRecord]:
        """The conversation so far, turn by turn: each turn's user message, its tool calls with their
        results, and the reply that ended it (as a trajectory records them)."""
        from agent_env._trajectory import turn_records

        turns = turn_records(self.events, self.task.turns)
        # A simulated user is asked before the event that ends the turn, which carries its answer.
        if turns and turns[-1].reply is None and len(self.replies) >= turns[-1].turn:
            turns[-1].reply = self.replies[turns[-1].turn - 1]
        return turns

    async def items(self, check: ItemsCheck) -> Any:
        """What an `items` verifier compares: the env's `items()`, or what its `tool` returns (a Python
        env's tool was checked at load; an MCP env's is its server's to know)."""
        from agent_env._env import Env

        env = self.envs[check.env]
        if isinstance(env, Env):
            if check.tool is None:
                return await call_maybe_async(env.items)
            spec = next(e for e in self.task.toolset.envs if e.name == check.env)
            tool = spec.tool(check.tool)
            assert isinstance(tool, Tool), "load_bundle checks the items verifier's tool"
            return await tool.invoke(env, check.arguments)
        assert check.tool is not None, "load_bundle gives an MCP env's items verifier a tool"
        return await env.acall(check.tool, check.arguments)

    async def bash(self, command: str, timeout_s: float = 30.0) -> CommandResult:
        """Run a command in the agent's sandbox, as the `bash` verifier does: for a verifier, once the
        episode sealed it (`agent_env.sandbox._sealing`), in a fresh shell of the verifiers' own."""
        if self.sandbox is None:
            raise EpisodeError(
                ErrorCode.VERIFIER_FAILED, f"task '{self.task.id}' has no sandbox to run bash in"
            )
        limit = self.task.sandbox_settings.max_output_bytes
        return await self.sandbox.run(command, timeout_s=timeout_s, max_output_bytes=limit)


@dataclass(frozen=True)
class UserContext(VerifierContext):
    """What a simulated user sees: the task, the envs as they are now, the replies, and `turns`, the
    conversation so far (each turn's message, tool calls with results, and reply, the last one's
    included)."""
