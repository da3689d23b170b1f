"""`AgentEnv`: a served bundle as TRL's `train_dataset` and `environment_factory`, and its reference
plays as demonstrations for SFT.

The dataset comes from the server's Task API. The factory is one generated class per toolset of the
split, each built from the tools the Task API's spec lists for it, so building it deploys nothing;
a toolset whose tools are known only once deployed (its spec's `tools` is null) is listed by playing
one of its tasks. With one toolset the factory is that class; with several it is a dict toolset
name -> class, and every dataset row names its class in TRL's `environment` column. The
demonstrations are the split's reference plays, played on the server (`demonstrations.py`), or
recorded successes (`successes.py`), in the same rows.
"""

from __future__ import annotations

import json
import logging
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agent_env._errors import ArgumentError, StateError
from agent_env._private.threading_exit import at_exit
from agent_env.client.deadlines import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_RESET_TIMEOUT_S,
    DEFAULT_TOOL_TIMEOUT_S,
    Deadlines,
)
from agent_env.client.session import GRACE_S
from agent_env.client.taskapi import TaskAPI
from agent_env.client.tools import offered_tools
from agent_env.client.wire import MAX_LABEL_LENGTH
from agent_env.curriculum import CurriculumPolicy
from agent_env.names import TRAINER_METHODS
from agent_env.specs import TaskSpec
from agent_env.training.trl.classes import (
    ToolsetSettings,
    check_rendering,
    close_instances,
    environment_class,
)
from agent_env.training.trl.curriculum import DEFAULT_ROWS, OnlineCurriculum, curriculum_rows
from agent_env.training.trl.demonstrations import (
    dataset_of,
    dataset_of_plays,
    no_solutions,
    play_solutions,
)
from agent_env.training.trl.errors import (
    DemonstrationError,
    DemonstrationWarning,
    ServerUnavailableError,
    UnknownSplitError,
)
from agent_env.training.trl.fleet import FleetSettings, fleet_of, task_apis
from agent_env.training.trl.selection import Bounds, Unmeasured, criteria, no_task_within, tasks_with_signal
from agent_env.training.trl.successes import (
    FOREIGN_CHOICES,
    Foreign,
    check_min_score,
    sift,
    trajectories_of,
)

if TYPE_CHECKING:
    from datasets import Dataset

    from agent_env.bundle import Bundle
    from agent_env.eval.results import EvalResult
    from agent_env.openenv import BackgroundServer
    from agent_env.sandbox.base import SandboxProvider
    from agent_env.trajectory import Trajectory

PROBE_LABEL = "agent_env: the factory's probe, listing the tools of toolset {toolset}"
"""The label of the episode a factory plays only to list a toolset's tools (an MCP env's, known only
once deployed): a server that records trajectories writes it into that episode's, so the probe, left
unfinished by design, reads as what it is."""


def probe_label(toolset: str) -> str:
    return PROBE_LABEL.format(toolset=toolset)[:MAX_LABEL_LENGTH]


Factory = type | dict[str, type]
log = logging.getLogger("agent_env.training.trl")


class AgentEnv:
    """The tasks and tools of the agent_env server at `url`, or of a fleet of them, shaped for TRL's
    GRPO trainers.

    `url` is one server's URL, or a list of servers that serve the same tasks; with
    `discover="dns"` it is one URL whose host resolves to every server's address (a Kubernetes
    headless Service) and is resolved again when a server is lost. Each session opens on the server
    with the most room (`fleet.py`); a server that stops answering costs its episodes their reward
    (None), and its sessions reopen on the others. Fails at once, with the fix in the message, when
    a server does not answer, serves no `split`, serves other tasks than the rest (a
    `FleetMismatchError`), or wants a bearer token it was not given: `token` (default:
    `AGENTENV_TOKEN`, if set) is one for every server, or a dict URL -> token, one per server.

    Deadlines, in seconds: `reset_timeout_s` bounds each reset (the deploy) and each end_turn (the
    last runs the verifiers); a tool call gets `tool_timeouts[name]` if it names the tool, else the
    deadline the tool declares (`@tool(timeout_s=...)`, bash's from the sandbox's), else
    `tool_timeout_s`; `connect_timeout_s` bounds opening a session. The server cuts a call off at
    the smaller of what it is sent and the tool's own.
    `label` (a run's name, say) goes with every reset, and a server that records trajectories writes
    it into each.
    """

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        discover: str | None = None,
        split: str = "train",
        reset_timeout_s: float = DEFAULT_RESET_TIMEOUT_S,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        tool_timeouts: Mapping[str, float] | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        token: str | Mapping[str, str] | None = None,
        label: str | None = None,
    ) -> None:
        if label is not None and not 0 < len(label) <= MAX_LABEL_LENGTH:
            raise ArgumentError(f"label must be 1 to {MAX_LABEL_LENGTH} characters, got {label!r}")
        for name, seconds in [
            ("reset_timeout_s", reset_timeout_s),
            ("tool_timeout_s", tool_timeout_s),
            ("connect_timeout_s", connect_timeout_s),
            *((f"tool_timeouts[{tool!r}]", s) for tool, s in (tool_timeouts or {}).items()),
        ]:
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < 1e9:
                raise ArgumentError(f"{name} must be a number of seconds > 0, got {seconds!r}")
        self.split = split
        self.reset_timeout_s = float(reset_timeout_s)
        self.tool_timeout_s = float(tool_timeout_s)
        self.tool_timeouts = {tool: float(s) for tool, s in (tool_timeouts or {}).items()}
        self.connect_timeout_s = float(connect_timeout_s)
        self.label = label
        given = FleetSettings.of(url, discover=discover, token=token)
        apis = task_apis(given)
        self._api = apis[0]
        self.url = given.urls[0]
        """The URL given (the first of a list)."""
        self.urls = tuple(api.url for api in apis)
        """The servers the fleet held at the start."""
        key = uuid.uuid4().hex
        self._fleet = fleet_of(
            key, replace(given, fingerprint=apis[0].fingerprint), connect_timeout_s=self.connect_timeout_s
        )
        self._held = _Held(key, self._api)
        try:
            self._tasks = {split: self._api.tasks(split)}
        except BaseException:
            self._held.close()
            raise
        at_exit(self._held.close)

    @classmethod
    def local(
        cls,
        bundle: Bundle | str | Path,
        *,
        max_concurrent_envs: int | None = None,
        sandbox: str | SandboxProvider | None = None,
        token: str | None = None,
        record: str | Path | None = None,
        warm: int | None = None,
        allow_internet: bool = False,
        skip_broken_tasks: bool = False,
        judge_url: str | None = None,
        judge_model: str | None = None,
        judge_cache: str | Path | None = None,
        **options: Any,
    ) -> AgentEnv:
        """Serve `bundle` in this process on a free loopback port, and use it.

        `max_concurrent_envs` defaults to `MAX_CONCURRENT_ENVS`, else 64; `record` is a folder for
        every episode's trajectory (as `agent-env serve --record`), `warm` the Docker sandboxes'
        warm pool (as `--warm`), `allow_internet` a network for the tasks that ask for one (as
        `--allow-internet`; a folder of Harbor tasks is a bundle too), `skip_broken_tasks` the
        tasks that do not load left out, each logged with its first problem (as
        `--skip-broken-tasks`), instead of one stopping them all. `judge_url`, `judge_model` and
        `judge_cache` are the `judge` verifiers' endpoint, model and verdicts' folder (as
        `--judge-url`, `--judge-model`, `--judge-cache`). The server stops, after tearing down every
        episode, at `close()` or when the process exits.
        """
        from agent_env.openenv import build_app

        app = build_app(
            bundle,
            max_concurrent_envs=max_concurrent_envs,
            sandbox=sandbox,
            token=token,
            record=record,
            warm=warm,
            allow_internet=allow_internet,
            skip_broken_tasks=skip_broken_tasks,
            judge_url=judge_url,
            judge_model=judge_model,
            judge_cache=judge_cache,
        )
        return cls.serving(app, token=token, **options)

    @classmethod
    def serving(cls, app: Any, **options: Any) -> AgentEnv:
        """Serve `app`, an agent_env server's ASGI app, in this process on a free loopback port, and use it.

        `local(bundle)` is this with `build_app(bundle)`; pass `build_served_app(served)` for tasks that
        are not a bundle's (`agent_env.testing`'s fakes), or such an app wrapped in ASGI middleware.
        `options` are AgentEnv's. The server stops as `local()`'s does: at `close()` or at exit.
        """
        from agent_env.openenv import BackgroundServer

        server = BackgroundServer(app).start()
        try:
            env = cls(server.url, **options)
        except BaseException:
            server.stop()
            raise
        env._held.server = server
        return env

    @cached_property
    def dataset(self) -> Dataset:
        """One row per task of the split: `prompt` (chat messages), `split`, `index` (and `environment`)."""
        return self.dataset_for(self.split)

    def dataset_for(
        self,
        split: str,
        *,
        results: EvalResult | str | Path | None = None,
        score_std: Bounds | None = None,
        mean_score: Bounds | None = None,
        pass_rate: Bounds | None = None,
        unmeasured: Unmeasured = "error",
    ) -> Dataset:
        """The rows of a split (an eval split, say), for the same factory.

        With `results` (`agent-env eval --split SPLIT -n K`'s results.json, or an `EvalResult`), only
        the tasks whose measures lie within the bounds asked, each (low, high), both included, None for
        no bound: `score_std=(0.01, None)` keeps the tasks whose samples differ in score (GRPO's groups
        of them carry signal, partial credit included), `mean_score=(low, high)` and
        `pass_rate=(low, high)` (the share of samples scored 1.0) those within them; several bounds
        must all hold. These are `tasks_with_signal`'s, which says how results of another bundle or
        split, and tasks without a measure, are refused or, by `unmeasured`, kept or dropped. None
        within the bounds is a ValueError that says how many fell below and above.
        """
        from datasets import Dataset

        tasks = self._split_tasks(split)
        asked = criteria(score_std=score_std, mean_score=mean_score, pass_rate=pass_rate)
        if bool(asked) != (results is not None):
            named = " and ".join(criterion.measure for criterion in asked) or "results"
            raise ArgumentError(
                f"{named} and bounds to select by go together: pass results=the results.json of "
                f"`agent-env eval --split {split} -n K` with score_std=(0.01, None) (the tasks whose samples "
                "differ in score), mean_score=(low, high) or pass_rate=(low, high); or none of them for "
                "every task of the split"
                if results is not None
                else f"{named} needs results=: the results.json of `agent-env eval --split {split} -n K` "
                "that measured it; or leave it out for every task of the split"
            )
        if asked and results is not None:
            chosen = set(
                tasks_with_signal(
                    results,
                    score_std=score_std,
                    mean_score=mean_score,
                    pass_rate=pass_rate,
                    tasks=tasks,
                    tasks_fingerprint=self._api.fingerprint,
                    unmeasured=unmeasured,
                )
            )
            if not chosen:
                raise ArgumentError(no_task_within(split, asked, results))
            tasks = [task for task in tasks if task.index in chosen]
        toolsets = self._toolsets()
        if stray := sorted({task.toolset.name for task in tasks} - set(toolsets)):
            raise ArgumentError(
                f"split '{split}' has tasks of toolsets ({', '.join(stray)}) that split '{self.split}', the "
                f"factory's, lacks, so TRL could not run them: make AgentEnv(url, split='{split}') for them"
            )
        multi = len(toolsets) > 1
        return Dataset.from_list([_row(task, multi) for task in tasks])

    def curriculum(
        self,
        split: str | None = None,
        *,
        policy: CurriculumPolicy | None = None,
        seed: int = 0,
        rows: int = DEFAULT_ROWS,
    ) -> OnlineCurriculum:
        """An online curriculum over a split's tasks (default: the AgentEnv's): the server draws each
        GRPO group's task from the scores it has seen (`agent_env.curriculum`; `policy` its knobs,
        `seed` its draws). Train on its `dataset` (`rows` rows, each a slot, none a task) with this
        factory, and pass its `callback` to the trainer."""
        from datasets import Dataset

        split = split or self.split
        tasks = self._split_tasks(split)
        if split != self.split:
            self._toolsets()  # the factory's toolsets: the curriculum's tasks must be of one of them
        run = uuid.uuid4().hex
        chosen = policy or CurriculumPolicy()
        dataset = Dataset.from_list(curriculum_rows(tasks, run, chosen, seed, rows))
        return OnlineCurriculum(dataset, self._fleet.settings, run, split, tasks, policy=chosen, seed=seed)

    def demonstrations(self, split: str = "train", *, strict: bool = False) -> Dataset:
        """The split's reference plays as conversations for TRL's `SFTTrainer`: a warm-up before GRPO.

        One row per task of the split with a solution (its bundle's `solutions/SPLIT.jsonl`), each
        played on the server now, so every tool result is the server's: `messages` (the prompt, the
        tool calls and their results, each `end_turn` answered as in training, then an empty
        assistant message: where to stop), `tools` (the toolset's tools as GRPOTrainer shows them
        to the model, `end_turn` included: `offered_tools`), `split`, `index` and `id`. A play that
        no longer scores its `expected_score` (or fails) is left out, with a `DemonstrationWarning`
        naming each; with `strict=True` a `DemonstrationError` instead. A split without solutions
        is a `DemonstrationError`; an unknown split as for `dataset_for`.
        """
        from agent_env.eval.play import PlaySettings

        tasks = {task.index: task for task in self._split_tasks(split)}
        solutions = self._api.solutions(split)
        if not solutions:
            raise no_solutions(split, self._api.url, tasks.values())
        tools = self._offered(tasks[solution.index] for solution in solutions)
        settings = PlaySettings(
            max_tool_calls=None,  # a reference play is a finite script: every call of it is played
            reset_timeout_s=self.reset_timeout_s,
            tool_timeout_s=max([self.tool_timeout_s, *self.tool_timeouts.values()]),
            connect_timeout_s=self.connect_timeout_s,
        )
        played = play_solutions(
            self._api.url,
            tasks,
            solutions,
            settings,
            token=self._fleet.settings.token_for(self._api.url),
            sessions=self._api.max_concurrent_envs,
        )
        return dataset_of(split, played, tools, strict=strict)

    def demonstrations_from(
        self,
        trajectories: str | Path | Trajectory | Iterable[Trajectory],
        split: str = "train",
        *,
        min_score: float = 1.0,
        foreign: Foreign = "error",
    ) -> Dataset:
        """Recorded successes as conversations for `SFTTrainer`, in exactly `demonstrations`' rows:
        sample (`agent-env eval --split train -n K --out DIR`, or a server's `--record DIR`), keep
        what scored at least `min_score`, SFT on it, then GRPO: expert iteration, for a bundle
        without reference plays too.

        `trajectories` is a file or folder of them (as `read_trajectories` reads it), one
        `Trajectory`, or an iterable of them. One row per trajectory of `split` that ended scored at
        least `min_score`: several successes of one task are several rows (different samples). The
        prompt and the tools are this server's, for the task at the trajectory's split and index;
        the turns, tool calls and results, and the prompts after the first (a simulated user's
        too), are the trajectory's, as the server answered them (what a bundle's `[record]` redacts
        is `[redacted]` there, and so in the row); a turn ended by text, or by a call that did not
        parse, ends with `end_turn` and that reply, as in training. Left out, each counted in one
        INFO line (logger `agent_env.training.trl`): trajectories of other splits, ones read twice
        (same id), ones that did not end scored (failed, abandoned, an eval error: cut short), and
        ones scoring below `min_score`. A trajectory of a task this server does not serve (another id, toolset
        or prompt at that index, or a scored one with another count of turns) is foreign: a
        `DemonstrationError` naming each, or with `foreign="skip"` left out with a
        `DemonstrationWarning`. No success at all is a `DemonstrationError` with the counts.
        """
        min_score = check_min_score(min_score)
        if foreign not in FOREIGN_CHOICES:
            raise ArgumentError(f"foreign must be one of {', '.join(FOREIGN_CHOICES)}, got {foreign!r}")
        sifted = sift(trajectories_of(trajectories), split, self._split_tasks(split), min_score)
        if sifted.read == 0:
            where = trajectories if isinstance(trajectories, str | Path) else "the trajectories given"
            raise DemonstrationError(
                f"no trajectories in {where}: `agent-env eval --split {split} -n K --out DIR` or "
                "`agent-env serve --record DIR` writes them"
            )
        if sifted.foreign:
            report = sifted.foreign_report(self._api.url)
            if foreign == "error":
                fix = (
                    "Pass the trajectories of this server's tasks (a bundle changed since they were "
                    "recorded is another bundle), or foreign='skip' to leave these out."
                )
                raise DemonstrationError(report + fix, tuple(sifted.foreign))
            warnings.warn(f"{report}They are left out.", DemonstrationWarning, stacklevel=2)
        if not sifted.kept:
            raise DemonstrationError(sifted.none_kept())
        log.info("demonstrations from trajectories: %s", sifted.summary())
        return dataset_of_plays(sifted.kept, self._offered(task for task, _ in sifted.kept))

    @cached_property
    def factory(self) -> Factory:
        """TRL's `environment_factory`: a class, or a dict toolset name -> class when toolsets differ."""
        self._require_open()
        classes: dict[str, type] = {}
        for name, task in self._toolsets().items():
            made = environment_class(self._settings(name, task))
            check_rendering(made)
            classes[name] = made
        tools = {tool for made in classes.values() for tool in dir(made) if not tool.startswith("_")}
        if stray := sorted(set(self.tool_timeouts) - tools):
            raise ArgumentError(
                f"tool_timeouts names tools no toolset of split '{self.split}' has: {', '.join(stray)} "
                f"(tools: {', '.join(sorted(tools - TRAINER_METHODS))})"
            )
        return next(iter(classes.values())) if len(classes) == 1 else classes

    def close(self) -> None:
        """End every episode this AgentEnv's environments hold, and stop the server `local()` or
        `serving()` started."""
        self._held.close()

    def __enter__(self) -> AgentEnv:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        given = self._fleet.settings
        url = given.urls[0] if len(given.urls) == 1 else list(given.urls)
        discover = "" if given.discover is None else f", discover={given.discover!r}"
        return f"AgentEnv({url!r}{discover}, split={self.split!r})"

    def _require_open(self) -> None:
        if self._held.closed:
            raise StateError(f"{self!r} is closed: make a new AgentEnv")

    def _split_tasks(self, split: str) -> list[TaskSpec]:
        self._require_open()
        if split not in self._tasks:
            self._tasks[split] = self._api.tasks(split)
        return self._tasks[split]

    def _toolsets(self) -> dict[str, TaskSpec]:
        """Each toolset of the split, with the first task that uses it."""
        tasks = self._split_tasks(self.split)
        if not tasks:
            raise UnknownSplitError(
                f"split '{self.split}' on {self._api.url} has no tasks: pass another split="
            )
        firsts: dict[str, TaskSpec] = {}
        for task in tasks:
            firsts.setdefault(task.toolset.name, task)
        return firsts

    def _settings(self, toolset: str, task: TaskSpec) -> ToolsetSettings:
        listing = self._listing(task)
        return ToolsetSettings(
            key=self._held.key,
            fleet=self._fleet.settings,
            toolset=toolset,
            tools=tuple(json.dumps(tool) for tool in listing.tools),
            deadlines=Deadlines(
                self.reset_timeout_s,
                self.tool_timeout_s,
                tuple(sorted(self.tool_timeouts.items())),
                tuple(sorted(listing.tool_timeouts.items())),
            ),
            connect_timeout_s=self.connect_timeout_s,
            label=self.label,
        )

    def _offered(self, tasks: Iterable[TaskSpec]) -> dict[str, list[dict[str, Any]]]:
        """The tools of each of the tasks' toolsets, as GRPOTrainer shows them to the model."""
        tools: dict[str, list[dict[str, Any]]] = {}
        for task in tasks:
            if task.toolset.name not in tools:
                tools[task.toolset.name] = offered_tools(self._listing(task).tools)
        return tools

    def _listing(self, task: TaskSpec) -> _Listing:
        """The tools of the task's toolset and the deadlines they declare: from its spec, or, for a
        toolset whose tools are known only once deployed, as the server lists them when the task is
        played."""
        if task.toolset.tools is not None:
            return _Listing(task.toolset.tools, task.toolset.tool_timeouts)
        return self._listed(task)

    def _listed(self, task: TaskSpec) -> _Listing:
        """The tools of the task's toolset, as the server lists them when the task is played."""
        session = self._fleet.open_session()
        try:
            label = probe_label(task.toolset.name)
            answer = session.reset(
                task.split, task.index, timeout_s=self.reset_timeout_s, label=label
            ).result()
        except Exception as exc:
            raise ServerUnavailableError(
                f"listing toolset '{task.toolset.name}': playing task {task.split}/{task.index} failed: {exc}"
            ) from None
        finally:
            session.close()
        if answer.error is not None or answer.tools is None:
            why = f"{answer.error.code}: {answer.error.message}" if answer.error else "it listed no tools"
            raise ServerUnavailableError(
                f"listing toolset '{task.toolset.name}': playing task {task.split}/{task.index} failed: {why}"
            )
        return _Listing(answer.tools, answer.tool_timeouts or {})


@dataclass(frozen=True)
class _Listing:
    """A toolset's tools as the server lists them, and the deadlines they declare (an older server
    lists none)."""

    tools: Sequence[Mapping[str, Any]]
    tool_timeouts: Mapping[str, float]


def _row(task: TaskSpec, multi: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"prompt": task.prompt, "split": task.split, "index": task.index}
    if multi:
        row["environment"] = task.toolset.name
    return row


@dataclass
class _Held:
    """What an AgentEnv must release, even when the process exits after the AgentEnv itself is gone
    (a trainer's script keeps the factory, not the AgentEnv): its classes' sessions, its server."""

    key: str
    api: TaskAPI
    server: BackgroundServer | None = None
    closed: bool = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        close_instances(self.key)
        self.api.close()
        if self.server is not None:
            self.server.stop()


__all__ = ["DEFAULT_RESET_TIMEOUT_S", "DEFAULT_TOOL_TIMEOUT_S", "GRACE_S", "AgentEnv"]
