"""Bundles: folders of envs, played agents and tasks that run without any registry.

    bundle.toml          name, [agents.NAME] (envs, role, bash, system_prompt), [mcp.NAME], [sandbox],
                         [judges.NAME] (a judge the tasks' `judge` verifiers share)
    envs/NAME.py         one Env subclass per module; the module's name is the env's name
    envs/NAME.toml       an MCP server as env NAME (or [mcp.NAME] in bundle.toml): command or url
    verifiers.py         optional: the bundle's own verifier functions
    users.py             optional: the bundle's simulated users (a task's `user`)
    tasks/SPLIT.jsonl    one task per line (or tasks/SPLIT.json: a list of tasks)
    solutions/SPLIT.jsonl  optional: a reference play (a `Solution`) per line, of a task of SPLIT
    files/...            optional: files tasks copy into their sandboxes

Loading checks everything and reports every problem at once, each with its file, its line or field,
what is wrong and how to fix it. Loading runs the bundle's own Python: a bundle is trusted code.

A load asked to skip the tasks that do not load (`skip_broken_tasks`) leaves out each task whose
problems are all its own, a Harbor task folder or a line of tasks/SPLIT.jsonl, and loads the others
(`Bundle.skipped` lists them). A problem no one task has (bundle.toml, envs/, verifiers.py,
solutions/, a tasks/SPLIT.json list, agent-env-splits.toml, no Docker engine) stops it still.
This module reads bundle.toml and the MCP servers; the other parts are read in `agent_env._bundle`.
`agent_env._loading.load_bundle` is the one entry point, which reads a Harbor dataset as a bundle too.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_env._bundle.checks import checked_agents, hint
from agent_env._bundle.code import module_package, public_functions, python_envs
from agent_env._bundle.folder import BundleFolder
from agent_env._bundle.judges import BundleJudges
from agent_env._bundle.solutions import read_solutions
from agent_env._bundle.tasks import Definitions, Splits, read_splits
from agent_env._contracts.judges import Judge
from agent_env._contracts.mcp import McpEnvDefinition
from agent_env._contracts.mcp_settings import McpServerConfig, resolve_placeholders
from agent_env._contracts.registry import is_sandbox_name, sandbox_names
from agent_env._digest import folder_digest
from agent_env._error_types import (
    BundleError,
    Problem,
    SkippedTask,
    SplitNotFoundError,
    TaskIndexError,
    validation_problems,
)
from agent_env._extras import install_line, installed
from agent_env._specs import Solution
from agent_env._task import Agent, BundleConfig, Task
from agent_env._toolset import AnyEnvDefinition
from agent_env._verifiers import VERIFIER_TYPES

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_TASK_LINE = re.compile(r"^(tasks/[^/:]+\.jsonl:\d+)(?:$|[ :])")
"""A problem's place in one line of a task file: that task's own, which a load may skip."""
MAX_FILE_BYTES = 256 * 2**20
"""The largest task file or sandbox source a bundle may hold: a bigger one is refused unread."""


@dataclass(frozen=True, eq=False)
class Bundle:
    """A loaded, checked bundle."""

    name: str
    path: Path
    config: BundleConfig
    envs: Mapping[str, AnyEnvDefinition]
    agents: Mapping[str, Agent]
    splits: Mapping[str, tuple[Task, ...]]
    content_digest: str
    """Every file of the folder, by its relative path and bytes (Python's caches and version control
    left out), read once at load: what decides a score beyond the task specs (verifiers, seeds, code).
    The server's `tasks_fingerprint` covers it."""
    solutions: Mapping[str, Mapping[str, Solution]] = field(default_factory=dict)
    """Split -> task id -> the task's reference play, from `solutions/SPLIT.jsonl`."""
    sandbox_per_task: bool = False
    """Whether each task brings its own sandbox settings (a Harbor task's image and limits) rather
    than sharing the bundle's `[sandbox]`."""
    skipped: tuple[SkippedTask, ...] = ()
    """The tasks left out because they do not load, each with its problems, when the load was asked
    to skip them (`load_bundle(path, skip_broken_tasks=True)`); `skipped_summary` words them."""

    @property
    def judges(self) -> list[Judge]:
        """Every judge its tasks' `judge` verifiers ask, once each: what a server checks at its start
        (`agent_env.judges.Judging.admit`)."""
        found = {
            verifier.judged_by: None
            for tasks in self.splits.values()
            for task in tasks
            for verifier in task.verifiers
            if verifier.judged_by is not None
        }
        return list(found)

    def tasks(self, split: str) -> tuple[Task, ...]:
        """The tasks of `split`, in index order."""
        try:
            return self.splits[split]
        except KeyError:
            raise SplitNotFoundError(f"unknown split '{split}' (splits: {', '.join(self.splits)})") from None

    def task(self, split: str, index: int) -> Task:
        tasks = self.tasks(split)
        if not 0 <= index < len(tasks):
            raise TaskIndexError(f"split '{split}' has {len(tasks)} tasks; index {index} is out of range")
        return tasks[index]

    def skipped_summary(self) -> str | None:
        """What a run says of the tasks its load skipped: "skipped N of M tasks:", then a line for
        each, its first problem (which names the task; a problem of several lines, a build's log,
        cut to its first), and how to see them all; None when none was skipped."""
        if not self.skipped:
            return None
        total = sum(len(tasks) for tasks in self.splits.values()) + len(self.skipped)
        lines = [f"skipped {len(self.skipped)} of {total} tasks:"]
        for task in self.skipped:
            first, *rest = str(task.problems[0]).splitlines()
            more = len(task.problems) - 1
            lines.append(f"  {first}" + (" [...]" if rest else "") + (f" (and {more} more)" if more else ""))
        lines.append(f"(`agent-env check {self.path}` lists every problem)")
        return "\n".join(lines)


def read_bundle_folder(path: str | Path, *, skip_broken_tasks: bool = False) -> Bundle:
    """Load and check the bundle folder at `path` (bundle.toml, envs/, tasks/); raises one BundleError
    listing every problem. `agent_env.load_bundle` is the entry point: it reads a Harbor dataset too."""
    return _Loader(Path(path), skip_broken_tasks).load()


class _Loader:
    """Reads bundle.toml and the MCP servers itself, and hands every other part to `agent_env._bundle`,
    all reporting to one `BundleFolder`."""

    def __init__(self, path: Path, skip: bool = False) -> None:
        self.folder = BundleFolder(path.resolve(), MAX_FILE_BYTES)
        self.root = self.folder.root
        self.shown = str(path)
        self.problem = self.folder.problem
        self.skip = skip

    def fail(self) -> BundleError:
        return BundleError(self.shown, self.folder.problems)

    def load(self) -> Bundle:
        if not (self.root / "bundle.toml").is_file():
            what = "is not a folder" if not self.root.is_dir() else "has no bundle.toml"
            self.problem("", f"{self.shown} {what}; a bundle is a folder with bundle.toml, envs/ and tasks/")
            raise self.fail()
        config = self._config()
        content = self._content()
        package = module_package(self.root)
        envs: dict[str, AnyEnvDefinition] = dict(python_envs(self.folder, package))
        envs.update(self._mcp_envs(config, envs))
        if config is not None and not config.mcp and not (self.root / "envs").is_dir():
            self.problem(
                "envs/",
                "missing; put one Python module per env in envs/ (envs/dock.py, ...), or declare an MCP "
                "server as an env ([mcp.NAME] in bundle.toml)",
            )
        functions = public_functions(self.folder, package, "verifiers.py")
        users = public_functions(self.folder, package, "users.py")
        agents: dict[str, Agent] = checked_agents(self.folder, config, envs) if config else {}
        read = Splits({}, {})
        if config:
            judges = BundleJudges(self.folder, config.judges)
            read = read_splits(self.folder, Definitions(config, envs, agents, functions, users, judges))
        splits = read.tasks
        solutions = read_solutions(self.folder, read)
        skipped = self._skipped(splits) if self.skip and self.folder.problems else ()
        if self.folder.problems or config is None or content is None:
            raise self.fail()
        kept = {split: tasks for split, tasks in splits.items() if tasks}  # a split all skipped is gone
        name = config.name or self.root.name
        return Bundle(
            name,
            self.root,
            config,
            envs,
            agents,
            kept,
            content,
            {split: plays for split, plays in solutions.items() if split in kept},
            skipped=skipped,
        )

    def _skipped(self, splits: Mapping[str, Iterable[Task]]) -> tuple[SkippedTask, ...]:
        """The task lines to leave out, each with its problems, which are then no longer the load's:
        none when a problem is no one line's own (the load then fails with every problem), or when
        no task would be left."""
        problems = self.folder.problems
        lines = [_TASK_LINE.match(problem.where) for problem in problems]
        if not all(lines):
            return ()
        if not any(True for tasks in splits.values() for _ in tasks):
            self.problem(
                "tasks/",
                f"no task loads (each of the {len({m[1] for m in lines if m})} task lines listed here has "
                "a problem), so skipping those that do not leaves nothing: fix them",
            )
            return ()
        by_line: dict[str, list[Problem]] = {}
        for line, problem in zip(lines, problems, strict=True):
            assert line is not None
            by_line.setdefault(line[1], []).append(problem)
        problems.clear()
        return tuple(SkippedTask(line, tuple(found)) for line, found in by_line.items())

    def _content(self) -> str | None:
        try:
            return folder_digest(self.root)
        except OSError as exc:
            self.problem(
                "",
                f"cannot read the bundle's files to fingerprint them: {exc}; make every file of the "
                "folder readable, or move what the bundle does not use out of it",
            )
            return None

    # bundle.toml

    def _config(self) -> BundleConfig | None:
        text = self.folder.read_text(self.root / "bundle.toml", "bundle.toml")
        if text is None:
            return None
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.problem("bundle.toml", f"malformed TOML: {exc}")
            return None
        if isinstance(raw.get("mcp"), dict):
            raw["mcp"] = {
                name: self._resolved(f"bundle.toml: mcp.{name}", table) if isinstance(table, dict) else table
                for name, table in raw["mcp"].items()
            }
        try:
            config = BundleConfig.model_validate(raw)
        except ValidationError as exc:
            for message in validation_problems(exc, noun="field", tags=VERIFIER_TYPES):
                self.problem("bundle.toml", message)
            return None
        provider = config.sandbox.provider
        if not is_sandbox_name(provider):
            known = sandbox_names()
            self.problem(
                "bundle.toml: sandbox.provider",
                f"unknown sandbox provider '{provider}'{hint(provider, known)}",
            )
        return config

    def _resolved(self, where: str, table: dict[str, Any]) -> dict[str, Any]:
        """A server's table with its placeholders resolved; each one that cannot be is a problem."""
        resolved, problems = resolve_placeholders(table, self.root)
        for problem in problems:
            self.problem(where, problem)
        return resolved

    def _mcp_envs(
        self, config: BundleConfig | None, envs: Mapping[str, AnyEnvDefinition]
    ) -> dict[str, McpEnvDefinition]:
        """The MCP servers of `[mcp.NAME]` and of `envs/NAME.toml`, as envs."""
        servers: dict[str, tuple[str, McpServerConfig]] = {}
        for name, server in (config.mcp if config else {}).items():
            servers[name] = (f"bundle.toml: mcp.{name}", server)
        folder = self.root / "envs"
        for file in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            where = f"envs/{file.name}"
            name = file.stem
            if name in servers:
                self.problem(where, f"env '{name}' is also [mcp.{name}] in bundle.toml; keep one of the two")
                continue
            text = self.folder.read_text(file, where)
            if text is None:
                continue
            try:
                raw = tomllib.loads(text)
                server = McpServerConfig.model_validate(self._resolved(where, raw))
            except tomllib.TOMLDecodeError as exc:
                self.problem(where, f"malformed TOML: {exc}")
                continue
            except ValidationError as exc:
                for message in validation_problems(exc, noun="field"):
                    self.problem(where, message)
                continue
            servers[name] = (where, server)
        if servers and not installed("mcp"):
            self.problem(
                next(iter(servers.values()))[0],
                f"MCP envs need the mcp extra, not installed here: {install_line('mcp')}",
            )
        found: dict[str, McpEnvDefinition] = {}
        for name, (where, server) in servers.items():
            if not _ENV_NAME.match(name):
                self.problem(where, f"env name '{name}' must match {_ENV_NAME.pattern}; rename it")
            elif name in envs or (folder / f"{name}.py").exists():
                self.problem(where, f"env '{name}' is also envs/{name}.py; an env is a module or a server")
            else:
                found[name] = McpEnvDefinition(name, server, self.root)
        return found
