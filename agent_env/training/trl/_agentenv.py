"""`AgentEnv`: a served bundle as TRL's `train_dataset` and `environment_factory`, and its reference
plays as demonstrations for SFT.

The class holds what an AgentEnv was given and what it opened (its fleet of servers, `_held.py`), and
hands each job to its module: the toolsets and their tools (`_toolsets.py`), the factory's classes
(`_factory.py`), the rows (`_rows.py`, the selection by eval results in `_selection.py`), the online
curriculum (`_curriculum.py`), the reference plays (`_demonstrations.py`) and recorded successes
(`_successes.py`) as SFT rows, and a server in this process (`_local.py`).
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agent_env._curriculum import CurriculumPolicy
from agent_env._errors import ArgumentError, StateError
from agent_env._private.threading_exit import at_exit
from agent_env._specs import TaskSpec
from agent_env.client._deadlines import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_RESET_TIMEOUT_S,
    DEFAULT_TOOL_TIMEOUT_S,
)
from agent_env.client._wire import MAX_LABEL_LENGTH
from agent_env.training.trl._classes import ToolsetSettings
from agent_env.training.trl._curriculum import DEFAULT_ROWS, OnlineCurriculum, curriculum_rows
from agent_env.training.trl._demonstrations import reference_demonstrations
from agent_env.training.trl._factory import Factory, factory_of, toolset_settings
from agent_env.training.trl._fleet import FleetSettings, fleet_of, task_apis
from agent_env.training.trl._held import Held
from agent_env.training.trl._local import local_app, serve_in_process
from agent_env.training.trl._rows import task_rows
from agent_env.training.trl._selection import Bounds, Unmeasured, selected
from agent_env.training.trl._successes import Foreign, successes_dataset
from agent_env.training.trl._toolsets import Listing, first_tasks, listing, offered

if TYPE_CHECKING:
    from datasets import Dataset

    from agent_env._bundle.reader import Bundle
    from agent_env._server_options import ServerOptions
    from agent_env._trajectory import Trajectory
    from agent_env.eval._results import EvalResult


class AgentEnv:
    """The tasks and tools of the agent_env server at `url`, or of a fleet of them, shaped for TRL's
    GRPO trainers.

    `url` is one server's URL, or a list of servers that serve the same tasks; with
    `discover="dns"` it is one URL whose host resolves to every server's address (a Kubernetes
    headless Service) and is resolved again when a server is lost. Each session opens on the server
    with the most room (`_fleet.py`); a server that stops answering costs its episodes their reward
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
        self._held = Held(key, self._api)
        try:
            self._tasks = {split: self._api.tasks(split)}
        except BaseException:
            self._held.close()
            raise
        at_exit(self._held.close)

    @classmethod
    def local(
        cls, bundle: Bundle | str | Path, options: ServerOptions | None = None, **given: Any
    ) -> AgentEnv:
        """Serve `bundle` in this process on a free loopback port, and use it.

        The server's options are `ServerOptions`' (`agent_env._server_options`, where each is described
        with its default, as `agent-env serve`'s flags are: `max_concurrent_envs`, `sandbox`, `record`,
        `warm`, `allow_internet`, `skip_broken_tasks`, the judges'...), given as keywords or as
        `options`; the other keywords are AgentEnv's, and `token` is both (the server requires it, the
        AgentEnv sends it). A keyword that is neither is an `ArgumentError` naming the nearest. The
        server stops, after tearing down every episode, at `close()` or when the process exits.
        """
        mine = [name for name in inspect.signature(cls.__init__).parameters if name not in ("self", "url")]
        app, chosen, left = local_app(bundle, options, given, mine)
        return cls.serving(app, **{**left, "token": chosen.token})

    @classmethod
    def serving(cls, app: Any, **options: Any) -> AgentEnv:
        """Serve `app`, an agent_env server's ASGI app, in this process on a free loopback port, and use it.

        `local(bundle)` is this with `build_app(bundle)`; pass `build_served_app(served)` for tasks that
        are not a bundle's (`agent_env.testing`'s fakes), or such an app wrapped in ASGI middleware.
        `options` are AgentEnv's. The server stops as `local()`'s does: at `close()` or at exit.
        """
        env, server = serve_in_process(app, lambda url: cls(url, **options))
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

        tasks = selected(
            self._split_tasks(split),
            split,
            results,
            score_std=score_std,
            mean_score=mean_score,
            pass_rate=pass_rate,
            unmeasured=unmeasured,
            tasks_fingerprint=self._api.fingerprint,
        )
        return Dataset.from_list(task_rows(tasks, self._toolsets(), split=split, factory_split=self.split))

    def curriculum(
        self,
        split: str | None = None,
        *,
        policy: CurriculumPolicy | None = None,
        seed: int = 0,
        rows: int = DEFAULT_ROWS,
    ) -> OnlineCurriculum:
        """An online curriculum over a split's tasks (default: the AgentEnv's): the server draws each
        GRPO group's task from the scores it has seen (`agent_env._curriculum`; `policy` its knobs,
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
        return reference_demonstrations(
            self._api,
            split,
            self._split_tasks(split),
            self._offered,
            reset_timeout_s=self.reset_timeout_s,
            tool_timeout_s=max([self.tool_timeout_s, *self.tool_timeouts.values()]),
            connect_timeout_s=self.connect_timeout_s,
            token=self._fleet.settings.token_for(self._api.url),
            strict=strict,
        )

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
        return successes_dataset(
            trajectories,
            split,
            self._split_tasks(split),
            url=self._api.url,
            offered=self._offered,
            min_score=min_score,
            foreign=foreign,
        )

    @cached_property
    def factory(self) -> Factory:
        """TRL's `environment_factory`: a class, or a dict toolset name -> class when toolsets differ."""
        self._require_open()
        return factory_of(
            self._toolsets(), self._settings, split=self.split, tool_timeouts=self.tool_timeouts
        )

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
        return first_tasks(self._split_tasks(self.split), self.split, self._api.url)

    def _settings(self, toolset: str, task: TaskSpec) -> ToolsetSettings:
        return toolset_settings(
            self._listing(task),
            key=self._held.key,
            fleet=self._fleet.settings,
            toolset=toolset,
            reset_timeout_s=self.reset_timeout_s,
            tool_timeout_s=self.tool_timeout_s,
            tool_timeouts=self.tool_timeouts,
            connect_timeout_s=self.connect_timeout_s,
            label=self.label,
        )

    def _offered(self, tasks: Iterable[TaskSpec]) -> dict[str, list[dict[str, Any]]]:
        return offered(tasks, self._listing)

    def _listing(self, task: TaskSpec) -> Listing:
        return listing(task, self._fleet, reset_timeout_s=self.reset_timeout_s)


__all__ = ["DEFAULT_RESET_TIMEOUT_S", "DEFAULT_TOOL_TIMEOUT_S", "AgentEnv"]
