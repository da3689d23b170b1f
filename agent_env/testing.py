"""Fakes for testing what stands on episodes (the server, the trainer's helper): real tasks, scripted.

A `FakeTask` makes a real `Task` whose tools are typed, documented functions, whose verifier is a
scripted score and whose sandbox answers `bash` from a script; its episodes are real `Episode`s, so
the server plays them by the core's own rules (the toolset, the prompt, the spec, the open turn).
`Gate`s hold its deploy, a tool, its verifiers or its teardown until the test releases them. Gates
are thread-safe: the server runs on its own loop and thread, the test on another.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from agent_env._contexts import VerifierContext
from agent_env._contracts.sandbox import CommandResult, Sandbox
from agent_env._env import Env, EnvDefinition
from agent_env._episode import Episode, EpisodeState
from agent_env._events import EpisodeEvent, ToolCalled, TornDown
from agent_env._served import ServedTask, ServedTasks
from agent_env._specs import DEFAULT_ROLE, AccessChange, Solution, TaskSpec
from agent_env._task import Agent, Task
from agent_env._threads import call_maybe_async
from agent_env._tools import Tool
from agent_env._toolset import Toolset
from agent_env._verifiers import FunctionCheck, Verifier

__all__ = ["FakeTask", "Gate", "Score", "calls", "fake_served"]


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

    def wait_reached(self, timeout_s: float = 10.0) -> bool:
        return self.reached.wait(timeout_s)

    @property
    def waiting(self) -> int:
        """How many wait at the gate now: several at once show work running side by side."""
        with self._lock:
            return len(self._waiters)

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


Score = float | Callable[[VerifierContext], float]
"""A fake task's score: a number, or a function of what its verifier sees (`calls(context)`, ...)."""


@dataclass(eq=False)
class FakeTask:
    """A task built in code: typed, documented functions as its tools, and a scripted score.

    A tool's function is its scripted result: it gets the validated arguments, and may raise (a
    `Tool` is taken as it is). The tools belong to the first of `envs`; `bash_result` answers the
    sandbox's commands. `solution`, if given, is the task's reference play, served as a bundle's
    `solutions/` are.
    """

    id: str
    tools: Sequence[Callable[..., Any] | Tool] = ()
    turns: Sequence[str] = ("Do the task.",)
    score: Score = 1.0
    system_prompt: str | None = None
    envs: tuple[str, ...] = ("fake",)
    role: str = DEFAULT_ROLE
    access: tuple[AccessChange, ...] = ()
    bash: bool = False
    bash_result: Callable[[str], CommandResult] = field(default=lambda command: CommandResult(0, ""))
    deploy_gate: Gate | None = None
    tool_gates: Mapping[str, Gate] = field(default_factory=dict)
    verify_gate: Gate | None = None
    teardown_gate: Gate | None = None
    deploy_error: Exception | None = None
    solution: Solution | None = None
    episodes: list[Episode] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._gone: dict[int, threading.Event] = {}
        env_class = type(f"{self.id}_env", (_ScriptedEnv,), {"script": self})
        tools = tuple(self._tool(fn) for fn in self.tools)
        definitions = [
            EnvDefinition(name, env_class, tools if i == 0 else ()) for i, name in enumerate(self.envs)
        ]
        self._task = Task(
            id=self.id,
            split="",
            index=0,
            agent=Agent("fake", self.envs, self.role, self.bash, self.system_prompt),
            turns=tuple(self.turns),
            toolset=Toolset(tuple(definitions), self.role, self.access, self.bash),
            verifiers=(Verifier(FunctionCheck(type="function", function="score"), self._score),),
        )

    def task_at(self, split: str, index: int) -> Task:
        """The task as a server serves it at `split`/`index`."""
        return dataclasses.replace(self._task, split=split, index=index)

    def spec(self, split: str, index: int) -> TaskSpec:
        return self.task_at(split, index).spec

    def new_episode(self, task: Task | None = None) -> Episode:
        """A real episode of the task (by default at train/0), its sandbox the scripted one."""
        episode = Episode(task or self.task_at("train", 0), provider=_ScriptedSandboxes(self))
        gone = threading.Event()
        episode.observe(lambda event: gone.set() if isinstance(event, TornDown) else None)
        with self._lock:
            self.episodes.append(episode)
            self._gone[id(episode)] = gone
        return episode

    @property
    def live(self) -> list[Episode]:
        """Episodes deployed (or deploying) and not yet torn down."""
        with self._lock:
            return [e for e in self.episodes if e.state not in (EpisodeState.NEW, EpisodeState.TORN_DOWN)]

    def wait_all_torn_down(self, timeout_s: float = 10.0) -> bool:
        """Whether every episode begun so far is torn down within `timeout_s` seconds."""
        with self._lock:
            begun = [self._gone[id(e)] for e in self.episodes if e.state is not EpisodeState.NEW]
        return all(gone.wait(timeout_s) for gone in begun)

    def _tool(self, function: Callable[..., Any] | Tool) -> Tool:
        """The tool, passing its gate (looked up at each call, so a test may set it later) first."""
        tool = function if isinstance(function, Tool) else Tool.from_function(function)

        async def gated(**arguments: Any) -> Any:
            if gate := self.tool_gates.get(tool.name):
                await gate.pass_through()
            return await call_maybe_async(tool.function, **arguments)

        return dataclasses.replace(tool, function=gated)

    async def _score(self, context: VerifierContext) -> float:
        if self.verify_gate:
            await self.verify_gate.pass_through()
        return float(self.score(context) if callable(self.score) else self.score)


class _ScriptedEnv(Env):
    """A fake task's env: its deploy and teardown pass the task's gates."""

    script: FakeTask

    async def setup(self, seed: Mapping[str, Any]) -> None:
        if self.script.deploy_gate:
            await self.script.deploy_gate.pass_through()
        if self.script.deploy_error is not None:
            raise self.script.deploy_error

    async def close(self) -> None:
        if self.script.teardown_gate:
            await self.script.teardown_gate.pass_through()


@dataclass
class _ScriptedSandboxes:
    """A sandbox provider whose sandboxes answer each command with the task's `bash_result`."""

    script: FakeTask
    name: str = "scripted"

    async def create(self, files: Mapping[str, bytes]) -> Sandbox:
        return _ScriptedSandbox(self.script.bash_result)


@dataclass(frozen=True)
class _ScriptedSandbox:
    answer: Callable[[str], CommandResult]

    async def run(self, command: str, *, timeout_s: float, max_output_bytes: int) -> CommandResult:
        return self.answer(command)

    async def seal(self) -> None:
        return None

    async def teardown(self) -> None:
        return None


def calls(played: Episode | VerifierContext) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls an episode made, in order, as (tool, arguments), from its events."""
    events: Sequence[EpisodeEvent] = played.events
    return [(e.tool, dict(e.arguments)) for e in events if isinstance(e, ToolCalled)]


def fake_served(splits: Mapping[str, Iterable[FakeTask]]) -> ServedTasks:
    """Serve fake tasks as a bundle's are served: split -> tasks, indexed by position."""
    served: dict[str, tuple[ServedTask, ...]] = {}
    for split, tasks in splits.items():
        placed = [(fake, fake.task_at(split, index)) for index, fake in enumerate(tasks)]
        served[split] = tuple(
            ServedTask(task.spec, partial(fake.new_episode, task), fake.solution) for fake, task in placed
        )
    return served
