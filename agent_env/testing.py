"""Fakes of the Episode API, for testing what stands on it (the server, the trainer's helper).

A `FakeTask` is served exactly as a bundle's task is; its episodes answer with scripted tool results
and scores, and `Gate`s hold its deploy, a tool, its verifiers or its teardown until the test
releases them. Gates are thread-safe: the server runs on its own loop and thread, the test on another.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_env.episode import TurnEnd
from agent_env.errors import EpisodeError
from agent_env.served import Served, ServedTask
from agent_env.specs import DEFAULT_ROLE, AccessChange, TaskSpec, ToolsetSpec
from agent_env.tools import Tool
from agent_env.toolset import BASH_TOOL, toolset_name


class Gate:
    """Holds whatever reaches it until `release()`; `reached` tells the test that something waits."""

    def __init__(self, *, held: bool = True) -> None:
        self._open = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.reached = threading.Event()
        self.passed = threading.Event()
        if not held:
            self._open.set()

    def release(self) -> None:
        with self._lock:
            self._open.set()
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # that loop has closed: nothing waits there
                loop.call_soon_threadsafe(event.set)

    def hold(self) -> None:
        self._open.clear()

    def wait_reached(self, timeout: float = 10.0) -> bool:
        return self.reached.wait(timeout)

    async def pass_through(self) -> None:
        """Wait, without blocking the loop and cancellably, until the gate is open."""
        self.reached.set()
        opened = asyncio.Event()
        with self._lock:
            if not self._open.is_set():
                self._waiters.append((asyncio.get_running_loop(), opened))
            else:
                opened.set()
        await opened.wait()
        self.passed.set()


@dataclass(eq=False)
class FakeTask:
    """A hand-built task: typed, documented functions as its tools, and a scripted score.

    `score` is a number or a function of the finished episode (its calls and replies). A tool's
    function is its scripted result: it gets the validated arguments, and may raise.
    """

    id: str
    tools: Sequence[Callable[..., Any]] = ()
    turns: Sequence[str] = ("Do the task.",)
    score: float | Callable[[FakeEpisode], float] = 1.0
    system_prompt: str | None = None
    envs: tuple[str, ...] = ("fake",)
    role: str = DEFAULT_ROLE
    access: tuple[AccessChange, ...] = ()
    bash: bool = False
    bash_result: Callable[[str], str] = field(default=lambda command: "[exit code: 0]")
    deploy_gate: Gate | None = None
    tool_gates: Mapping[str, Gate] = field(default_factory=dict)
    verify_gate: Gate | None = None
    teardown_gate: Gate | None = None
    deploy_error: Exception | None = None
    episodes: list[FakeEpisode] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._tools = {fn.__name__: Tool.from_function(fn) for fn in self.tools}
        self._lock = threading.Lock()

    @property
    def toolset(self) -> ToolsetSpec:
        name = toolset_name(self.envs, self.role, self.access, self.bash)
        return ToolsetSpec(name=name, envs=self.envs, role=self.role, access=self.access, bash=self.bash)

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        schemas = [tool.schema for tool in self._tools.values()]
        return [*schemas, BASH_TOOL] if self.bash else schemas

    def spec(self, split: str, index: int) -> TaskSpec:
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return TaskSpec(
            id=self.id,
            split=split,
            index=index,
            prompt=[*system, {"role": "user", "content": self.turns[0]}],
            turns=len(self.turns),
            toolset=self.toolset,
        )

    def new_episode(self) -> FakeEpisode:
        episode = FakeEpisode(self)
        with self._lock:
            self.episodes.append(episode)
        return episode

    @property
    def live(self) -> list[FakeEpisode]:
        """Episodes deployed (or deploying) and not yet torn down."""
        with self._lock:
            return [e for e in self.episodes if e.deploying.is_set() and not e.torn_down.is_set()]

    def wait_all_torn_down(self, timeout: float = 10.0) -> bool:
        """Whether every episode begun so far is torn down within `timeout` seconds."""
        with self._lock:
            begun = [e for e in self.episodes if e.deploying.is_set()]
        return all(e.torn_down.wait(timeout) for e in begun)


class FakeEpisode:
    """An episode of a FakeTask: it records its calls and replies, and passes its task's gates."""

    def __init__(self, task: FakeTask) -> None:
        self.task = task
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.replies: list[str] = []
        self.turn = 0
        self.score: float | None = None
        self.deploying = threading.Event()
        self.torn_down = threading.Event()
        self._teardown: asyncio.Task[None] | None = None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.task.tool_schemas

    async def deploy(self) -> str:
        self.deploying.set()
        if self.task.deploy_gate:
            await self.task.deploy_gate.pass_through()
        if self.task.deploy_error is not None:
            raise EpisodeError(
                "DEPLOY_FAILED", f"deploy of task '{self.task.id}' failed: {self.task.deploy_error}"
            )
        self.turn = 1
        return self.task.turns[0]

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        self._require_open_turn()
        self.calls.append((name, dict(arguments) if isinstance(arguments, Mapping) else {}))
        if gate := self.task.tool_gates.get(name):
            await gate.pass_through()
        if name == "bash" and self.task.bash:
            return self.task.bash_result(str(arguments.get("command", "")))
        tool = self.task._tools.get(name)
        if tool is None:
            raise EpisodeError(
                "UNKNOWN_TOOL", f"unknown tool '{name}' (tools: {', '.join(self.task._tools)})"
            )
        return await tool.call(None, arguments)

    async def end_turn(self, reply: str) -> TurnEnd:
        self._require_open_turn()
        self.replies.append(reply)
        if self.turn < len(self.task.turns):
            self.turn += 1
            return TurnEnd(done=False, turn=self.turn, prompt=self.task.turns[self.turn - 1])
        self.turn = -1
        if self.task.verify_gate:
            await self.task.verify_gate.pass_through()
        score = self.task.score(self) if callable(self.task.score) else self.task.score
        self.score = float(score)
        return TurnEnd(done=True, turn=len(self.task.turns), score=self.score, verifier_scores=(self.score,))

    async def teardown(self) -> None:
        if self._teardown is None:
            self._teardown = asyncio.ensure_future(self._release())
        await asyncio.shield(self._teardown)

    async def _release(self) -> None:
        self.turn = -1
        if self.task.teardown_gate:
            await self.task.teardown_gate.pass_through()
        self.torn_down.set()

    def _require_open_turn(self) -> None:
        if self.turn < 1:
            raise EpisodeError("NO_OPEN_TURN", f"no turn is open in the episode of task '{self.task.id}'")


def fake_served(splits: Mapping[str, Iterable[FakeTask]]) -> Served:
    """Serve fake tasks as a bundle's are served: split -> tasks, indexed by position."""
    return {
        split: tuple(
            ServedTask(task.spec(split, index), task.new_episode) for index, task in enumerate(tasks)
        )
        for split, tasks in splits.items()
    }
