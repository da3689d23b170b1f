"""Bundles: folders of envs, played agents and tasks that run without any registry.

    bundle.toml          name, [agents.NAME] (envs, role, bash, system_prompt), [mcp.NAME], [sandbox]
    envs/NAME.py         one Env subclass per module; the module's name is the env's name
    envs/NAME.toml       an MCP server as env NAME (or [mcp.NAME] in bundle.toml): command or url
    verifiers.py         optional: the bundle's own verifier functions
    users.py             optional: the bundle's simulated users (a task's `user`)
    tasks/SPLIT.jsonl    one task per line (or tasks/SPLIT.json: a list of tasks)
    solutions/SPLIT.jsonl  optional: a reference play (a `Solution`) per line, of a task of SPLIT
    files/...            optional: files tasks copy into their sandboxes

Loading checks everything and reports every problem at once, each with its file, its line or field,
what is wrong and how to fix it. Loading runs the bundle's own Python: a bundle is trusted code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import json
import re
import sys
import tomllib
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from inspect import Parameter
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from agent_env._digest import folder_digest
from agent_env._extras import installed
from agent_env._nearest import did_you_mean
from agent_env.env import Env, EnvSpec
from agent_env.errors import (
    BundleError,
    EnvDefinitionError,
    EpisodeError,
    Problem,
    SplitNotFoundError,
    TaskIndexError,
    validation_problems,
)
from agent_env.harbor.loader import harbor_folder, read_harbor
from agent_env.mcp._require import INSTALL as MCP_INSTALL
from agent_env.mcp.config import McpServerConfig, resolve_placeholders
from agent_env.mcp.spec import McpEnvSpec
from agent_env.sandbox.registry import PROVIDERS
from agent_env.specs import AccessChange, Solution
from agent_env.task import Agent, AgentConfig, BundleConfig, FileSource, Task, TaskEntry
from agent_env.toolset import AnyEnvSpec, Toolset
from agent_env.users._require import INSTALL as USERS_INSTALL
from agent_env.users.settings import USER_KINDS, UserFunction, UserModel
from agent_env.users.spec import SimulatedUser
from agent_env.verifiers import VERIFIER_TYPES, FunctionCheck, ItemsCheck, Verifier, VerifierFunction

_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_TASK_SUFFIXES = (".jsonl", ".json")
MAX_FILE_BYTES = 256 * 2**20
"""The largest task file or sandbox source a bundle may hold: a bigger one is refused unread."""
_module_counter = itertools.count()


@dataclass(frozen=True, eq=False)
class Bundle:
    """A loaded, checked bundle."""

    name: str
    path: Path
    config: BundleConfig
    envs: Mapping[str, AnyEnvSpec]
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


def load_bundle(path: str | Path) -> Bundle:
    """Load and check the bundle at `path`; raises one BundleError listing every problem.

    A folder of Harbor tasks (or one task folder: task.toml and instruction.md), or a path written
    `harbor:PATH`, is read as one (`agent_env.harbor`), its images built in the Docker engine."""
    harbor = harbor_folder(path)
    if harbor is not None:
        return _harbor_bundle(harbor, str(path))
    return _Loader(Path(path)).load()


def _harbor_bundle(folder: Path, shown: str) -> Bundle:
    read, problems = read_harbor(folder)
    if read is None or problems:
        raise BundleError(shown, problems)
    return Bundle(
        read.name,
        read.path,
        read.config,
        {},
        read.agents,
        read.splits,
        read.content_digest,
        read.solutions,
        sandbox_per_task=True,
    )


class _Loader:
    def __init__(self, path: Path) -> None:
        self.root = path.resolve()
        self.shown = str(path)
        self.problems: list[Problem] = []

    def problem(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

    def fail(self) -> BundleError:
        return BundleError(self.shown, self.problems)

    def load(self) -> Bundle:
        if not (self.root / "bundle.toml").is_file():
            what = "is not a folder" if not self.root.is_dir() else "has no bundle.toml"
            self.problem("", f"{self.shown} {what}; a bundle is a folder with bundle.toml, envs/ and tasks/")
            raise self.fail()
        config = self._config()
        content = self._content()
        package = f"_agent_env_bundle_{hashlib.sha1(str(self.root).encode()).hexdigest()[:8]}"
        package += f"_{next(_module_counter)}"
        envs: dict[str, AnyEnvSpec] = dict(self._envs(package))
        envs.update(self._mcp_envs(config, envs))
        if config is not None and not config.mcp and not (self.root / "envs").is_dir():
            self.problem(
                "envs/",
                "missing; put one Python module per env in envs/ (envs/dock.py, ...), or declare an MCP "
                "server as an env ([mcp.NAME] in bundle.toml)",
            )
        functions = self._functions(package, "verifiers.py")
        users = self._functions(package, "users.py")
        agents = self._agents(config, envs) if config else {}
        splits = self._splits(config, envs, agents, functions, users) if config else {}
        solutions = self._solutions(splits)
        if self.problems or config is None or content is None:
            raise self.fail()
        name = config.name or self.root.name
        return Bundle(name, self.root, config, envs, agents, splits, content, solutions)

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
        try:
            raw = tomllib.loads((self.root / "bundle.toml").read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
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
        if provider not in PROVIDERS:
            self.problem(
                "bundle.toml: sandbox.provider",
                f"unknown sandbox provider '{provider}'{_hint(provider, PROVIDERS)}",
            )
        return config

    # envs/ and verifiers.py

    def _envs(self, package: str) -> dict[str, EnvSpec]:
        folder = self.root / "envs"
        envs: dict[str, EnvSpec] = {}
        if not folder.is_dir():
            return envs
        for file in sorted(folder.glob("*.py")):
            if file.name.startswith("_"):
                continue
            where = f"envs/{file.name}"
            module = self._import(file, f"{package}.{file.stem}", where)
            if module is None:
                continue
            classes = [
                c
                for _, c in inspect.getmembers(module, inspect.isclass)
                if issubclass(c, Env) and c is not Env and c.__module__ == module.__name__
            ]
            if len(classes) != 1:
                found = f" ({', '.join(c.__name__ for c in classes)})" if classes else ""
                self.problem(
                    where, f"defines {len(classes)} Env subclasses{found}; define exactly one per module"
                )
                continue
            try:
                envs[file.stem] = EnvSpec.from_class(file.stem, classes[0])
            except EnvDefinitionError as exc:
                for error in exc.errors:
                    line = f":{error.line}" if error.line else ""
                    for reason in error.reasons:
                        self.problem(f"{where}{line}", f"tool '{error.tool}': {reason}")
        return envs

    def _resolved(self, where: str, table: dict[str, Any]) -> dict[str, Any]:
        """A server's table with its placeholders resolved; each one that cannot be is a problem."""
        resolved, problems = resolve_placeholders(table, self.root)
        for problem in problems:
            self.problem(where, problem)
        return resolved

    def _mcp_envs(self, config: BundleConfig | None, envs: Mapping[str, AnyEnvSpec]) -> dict[str, McpEnvSpec]:
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
            if not self._inside(file, where):
                continue
            try:
                raw = tomllib.loads(file.read_text(encoding="utf-8"))
                server = McpServerConfig.model_validate(self._resolved(where, raw))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
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
                f"MCP envs need the mcp extra, not installed here: {MCP_INSTALL}",
            )
        found: dict[str, McpEnvSpec] = {}
        for name, (where, server) in servers.items():
            if not _ENV_NAME.match(name):
                self.problem(where, f"env name '{name}' must match {_ENV_NAME.pattern}; rename it")
            elif name in envs or (folder / f"{name}.py").exists():
                self.problem(where, f"env '{name}' is also envs/{name}.py; an env is a module or a server")
            else:
                found[name] = McpEnvSpec(name, server, self.root)
        return found

    def _functions(self, package: str, filename: str) -> dict[str, VerifierFunction]:
        """The public functions of a module of the bundle's (verifiers.py, users.py), by name."""
        file = self.root / filename
        if not file.exists():
            return {}
        module = self._import(file, f"{package}.{file.stem}", filename)
        if module is None:
            return {}
        return {
            name: fn
            for name, fn in inspect.getmembers(module, inspect.isfunction)
            if not name.startswith("_") and fn.__module__ == module.__name__
        }

    def _import(self, file: Path, name: str, where: str) -> ModuleType | None:
        if not self._inside(file, where):
            return None
        spec = importlib.util.spec_from_file_location(name, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(file)]
            line = f":{frames[-1].lineno}" if frames else ""
            if isinstance(exc, SyntaxError) and exc.lineno:
                line = f":{exc.lineno}"
            self.problem(f"{where}{line}", f"failed to import: {type(exc).__name__}: {exc}")
            return None
        return module

    # agents

    def _agents(self, config: BundleConfig, envs: Mapping[str, AnyEnvSpec]) -> dict[str, Agent]:
        agents: dict[str, Agent] = {}
        for name, agent in config.agents.items():
            where = f"bundle.toml: agents.{name}"
            ok = True
            for env in agent.envs:
                if env not in envs:
                    ok = False
                    if any((self.root / "envs" / f"{env}{suffix}").exists() for suffix in (".py", ".toml")):
                        continue  # its module or server failed to load; that problem is already reported
                    if config.mcp.get(env) is not None:
                        continue
                    self.problem(where, f"names env '{env}', which is not defined{_hint(env, envs)}")
            if ok:
                ok = self._no_tool_clashes(where, agent, envs)
            if ok:
                agents[name] = Agent(name, agent.envs, agent.role, agent.bash, agent.system_prompt)
        return agents

    def _no_tool_clashes(self, where: str, agent: AgentConfig, envs: Mapping[str, AnyEnvSpec]) -> bool:
        """Whether the agent's envs' tools have distinct names (an MCP env's are checked once listed)."""
        owner: dict[str, str] = {}
        for env in agent.envs:
            for tool in envs[env].tools or ():
                if tool.name in owner:
                    self.problem(
                        where,
                        f"envs '{owner[tool.name]}' and '{env}' both define tool '{tool.name}'; "
                        "rename one, since an agent's tools need distinct names",
                    )
                    return False
                owner[tool.name] = env
        return True

    # tasks/

    def _splits(
        self,
        config: BundleConfig,
        envs: Mapping[str, AnyEnvSpec],
        agents: Mapping[str, Agent],
        functions: Mapping[str, VerifierFunction],
        users: Mapping[str, Callable[..., Any]],
    ) -> dict[str, tuple[Task, ...]]:
        folder = self.root / "tasks"
        files = sorted(f for f in folder.glob("*") if f.suffix in _TASK_SUFFIXES) if folder.is_dir() else []
        if not files:
            self.problem(
                "tasks/", "no task files; add tasks/train.jsonl with one task (a JSON object) per line"
            )
            return {}
        roles = {a.role for a in config.agents.values()} | {
            role for env in envs.values() for t in env.tools or () for role in (t.roles or ())
        }
        roles |= {
            role
            for env in envs.values()
            if isinstance(env, McpEnvSpec)
            for r in env.server.roles.values()
            for role in r
        }
        seen_ids: dict[str, str] = {}
        splits: dict[str, tuple[Task, ...]] = {}
        for file in files:
            where = f"tasks/{file.name}"
            split = file.stem
            if split in splits:
                self.problem(where, f"split '{split}' has two files; keep one of .jsonl and .json")
                continue
            if not _SPLIT_NAME.match(split):
                self.problem(where, f"split name '{split}' must match {_SPLIT_NAME.pattern}; rename the file")
                continue
            if not self._inside(file, where) or not self._small_enough(file, where):
                continue
            tasks: list[Task] = []
            entries = 0
            for line, raw in self._entries(file, where):
                entries += 1
                place = f"{where}:{line}" if line else where
                task = self._task(
                    place, raw, split, len(tasks), config, envs, agents, functions, users, roles
                )
                if task is None:
                    continue
                if task.id in seen_ids:
                    self.problem(
                        place,
                        f"duplicate task id '{task.id}' (first at {seen_ids[task.id]}); ids must be unique",
                    )
                    continue
                seen_ids[task.id] = place
                tasks.append(task)
            if not entries and not any(p.where.startswith(where) for p in self.problems):
                self.problem(where, f"split '{split}' has no tasks; add one per line or delete the file")
            splits[split] = tuple(tasks)
        return splits

    def _entries(self, file: Path, where: str) -> Iterable[tuple[int | None, Any]]:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.problem(where, f"cannot be read: {exc}")
            return
        if file.suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                self.problem(f"{where}:{exc.lineno}", f"malformed JSON: {exc.msg}")
                return
            if not isinstance(data, list):
                self.problem(where, "must hold a JSON list of tasks")
                return
            yield from ((None, entry) for entry in data)
            return
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                self.problem(f"{where}:{number}", f"malformed JSON: {exc.msg} (column {exc.colno})")

    def _task(
        self,
        place: str,
        raw: Any,
        split: str,
        index: int,
        config: BundleConfig,
        envs: Mapping[str, AnyEnvSpec],
        agents: Mapping[str, Agent],
        functions: Mapping[str, VerifierFunction],
        users: Mapping[str, Callable[..., Any]],
        roles: set[str],
    ) -> Task | None:
        try:
            entry = TaskEntry.model_validate(raw)
        except ValidationError as exc:
            label = (
                f" (task '{raw['id']}')" if isinstance(raw, dict) and isinstance(raw.get("id"), str) else ""
            )
            for message in validation_problems(exc, noun="field", tags=(*VERIFIER_TYPES, *USER_KINDS)):
                self.problem(f"{place}{label}", message)
            return None
        place = f"{place} (task '{entry.id}')"
        before = len(self.problems)
        agent = agents.get(entry.agent)
        if agent is None:
            if entry.agent not in config.agents:
                self.problem(
                    place, f"agent '{entry.agent}' is not defined{_hint(entry.agent, config.agents)}"
                )
            return None
        for env in entry.seed:
            if env not in agent.envs:
                self.problem(
                    place,
                    f"seed names env '{env}', which agent '{agent.name}' does not use"
                    + _hint(env, agent.envs),
                )
            elif isinstance(server := envs.get(env), McpEnvSpec) and server.server.url is not None:
                self.problem(
                    place,
                    f"seed names env '{env}', an MCP server every episode shares (a url): it takes no "
                    "task's seed; seed a stdio server (given AGENT_ENV_SEED), or keep its data on the server",
                )
        self._check_access(place, entry.modify_env_tool_access, agent, envs, roles)
        verifiers = self._verifiers(place, entry, agent, envs, functions)
        files = self._files(place, entry.files)
        user = self._user(place, entry, users)
        if len(self.problems) > before:
            return None
        toolset = Toolset(
            envs=tuple(envs[e] for e in agent.envs),
            role=agent.role,
            access=tuple(c for c in entry.modify_env_tool_access if c.role == agent.role),
            bash=agent.bash,
        )
        return Task(
            id=entry.id,
            split=split,
            index=index,
            agent=agent,
            turns=tuple(entry.turns),
            toolset=toolset,
            verifiers=verifiers,
            aggregate=entry.aggregate,
            seed=entry.seed,
            files=files,
            sandbox_settings=config.sandbox,
            user=user,
        )

    # solutions/

    def _solutions(self, splits: Mapping[str, tuple[Task, ...]]) -> dict[str, dict[str, Solution]]:
        folder = self.root / "solutions"
        files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
        solutions: dict[str, dict[str, Solution]] = {}
        for file in files:
            where = f"solutions/{file.name}"
            split = file.stem
            if split not in splits:
                if not any((self.root / "tasks" / f"{split}{suffix}").exists() for suffix in _TASK_SUFFIXES):
                    self.problem(
                        where,
                        f"split '{split}' has no tasks{_hint(split, splits)}: name the file after a "
                        "split of tasks/, or delete it",
                    )
                continue  # else that split's tasks failed to load: those problems are reported
            if not self._inside(file, where) or not self._small_enough(file, where):
                continue
            tasks = {task.id: task for task in splits[split]}
            scripts: dict[str, Solution] = {}
            for line, raw in self._entries(file, where):
                place = f"{where}:{line}"
                script = self._script(place, raw, split, tasks)
                if script is None:
                    continue
                if script.id in scripts:
                    self.problem(place, f"a second solution of task '{script.id}'; keep one line per task")
                    continue
                scripts[script.id] = script
            solutions[split] = scripts
        return solutions

    def _script(self, place: str, raw: Any, split: str, tasks: Mapping[str, Task]) -> Solution | None:
        try:
            script = Solution.model_validate(raw)
        except ValidationError as exc:
            label = (
                f" (task '{raw['id']}')" if isinstance(raw, dict) and isinstance(raw.get("id"), str) else ""
            )
            for message in validation_problems(exc, noun="field"):
                self.problem(f"{place}{label}", message)
            return None
        task = tasks.get(script.id)
        if task is None:
            if any(p.where.startswith(f"tasks/{split}.") for p in self.problems):
                return None  # the task may be one that failed to load: that problem is reported
            self.problem(
                place,
                f"task '{script.id}' is not a task of split '{split}'{_hint(script.id, tasks)}: "
                f"a solution names a task of tasks/{split}.jsonl by its id",
            )
            return None
        if not len(task.turns) <= len(script.turns) <= task.max_turns:
            has = (
                f"has {_turns(len(task.turns))}"
                if task.user is None
                else f"fixes {_turns(len(task.turns))} and lets its user add up to {task.max_turns} in all"
            )
            self.problem(
                f"{place} (task '{script.id}')",
                f"the solution plays {_turns(len(script.turns))} and the task {has}: "
                'write one {"calls": [...], "reply": ...} per turn of the task',
            )
            return None
        return script if self._offered(f"{place} (task '{script.id}')", script, task) else None

    def _offered(self, where: str, script: Solution, task: Task) -> bool:
        """Whether every tool the solution calls is one the task offers its agent; an MCP env's tools
        are known only once its server runs, so a task with one is checked when it is played."""
        if not task.toolset.tools_known:
            return True
        offered = [tool["function"]["name"] for tool in task.toolset.tools]
        unknown = [
            (number, call.tool)
            for number, turn in enumerate(script.turns, 1)
            for call in turn.calls
            if call.tool not in offered
        ]
        for number, name in unknown:
            self.problem(
                where,
                f"turn {number} calls tool '{name}', which the task does not offer"
                f"{_hint(name, offered)} (tools: {', '.join(offered) or 'none'})",
            )
        return not unknown

    def _check_access(
        self,
        place: str,
        changes: Iterable[AccessChange],
        agent: Agent,
        envs: Mapping[str, AnyEnvSpec],
        roles: set[str],
    ) -> None:
        for n, change in enumerate(changes):
            where = f"{place}: modify_env_tool_access[{n}]"
            if change.role not in roles:
                self.problem(
                    where, f"role '{change.role}' is not used by any agent or tool{_hint(change.role, roles)}"
                )
            if change.env is not None and change.env not in agent.envs:
                self.problem(
                    where,
                    f"env '{change.env}' is not one of agent '{agent.name}''s envs"
                    + _hint(change.env, agent.envs),
                )
                continue
            scope = [change.env] if change.env else list(agent.envs)
            if change.tools == "*" or any(envs[e].tools is None for e in scope):
                continue  # an MCP env's tools are known once listed: the deploy checks these names
            known = {t.name for e in scope for t in envs[e].tools or ()}
            for name in change.tools:
                if name not in known:
                    self.problem(
                        where, f"tool '{name}' is not a tool of {', '.join(scope)}{_hint(name, known)}"
                    )

    def _verifiers(
        self,
        place: str,
        entry: TaskEntry,
        agent: Agent,
        envs: Mapping[str, AnyEnvSpec],
        functions: Mapping[str, VerifierFunction],
    ) -> tuple[Verifier, ...]:
        verifiers = []
        for n, spec in enumerate(entry.verifiers):
            where = f"{place}: verifiers[{n}]"
            if isinstance(spec, ItemsCheck):
                if spec.env not in agent.envs:
                    self.problem(
                        where,
                        f"verifier 'items' names env '{spec.env}'{_hint(spec.env, agent.envs)} "
                        f"(agent '{agent.name}' uses: {', '.join(agent.envs) or 'no envs'})",
                    )
                else:
                    self._items_source(where, spec, envs[spec.env])
            if isinstance(spec, FunctionCheck):
                function = functions.get(spec.function)
                if function is None:
                    self.problem(
                        where,
                        f"verifier function '{spec.function}' is not defined in verifiers.py"
                        f"{_hint(spec.function, functions)}",
                    )
                verifiers.append(Verifier(spec, function))
            else:
                verifiers.append(Verifier(spec))
        return tuple(verifiers)

    def _items_source(self, where: str, check: ItemsCheck, env: AnyEnvSpec) -> None:
        """An items verifier reads `items()`, or a tool of the env's with arguments it takes."""
        if check.tool is None:
            if isinstance(env, McpEnvSpec):
                self.problem(
                    where,
                    f"env '{env.name}' is an MCP server: name the tool that returns its items "
                    '("tool": ..., "arguments": {...})',
                )
            elif not env.has_items:
                self.problem(
                    where, f"env '{env.name}' does not define items(), which the items verifier reads"
                )
            return
        if isinstance(env, McpEnvSpec):
            return  # its tools are its server's to list: the verifier checks the name when it runs
        tool = env.tool(check.tool)
        if tool is None:
            self.problem(
                where,
                f"env '{env.name}' has no tool '{check.tool}'"
                + _hint(check.tool, [t.name for t in env.tools]),
            )
            return
        try:
            tool.validate(check.arguments)
        except EpisodeError as exc:
            self.problem(where, f"the items verifier's arguments: {exc.message}")

    def _user(
        self, place: str, entry: TaskEntry, users: Mapping[str, Callable[..., Any]]
    ) -> SimulatedUser | None:
        """The task's simulated user, checked: its function and arguments, or its model's client."""
        spec = entry.user
        if spec is None:
            return None
        where = f"{place}: user"
        if spec.max_turns < len(entry.turns):
            self.problem(
                where,
                f"max_turns is {spec.max_turns}, but the task fixes {_turns(len(entry.turns))}: "
                "raise max_turns",
            )
        if isinstance(spec, UserModel):
            if not installed("openai"):
                self.problem(
                    where,
                    f"a chat model's user needs the users extra, not installed here: {USERS_INSTALL}",
                )
            return SimulatedUser(spec)
        assert isinstance(spec, UserFunction)
        function = users.get(spec.function)
        if function is None:
            self.problem(
                where,
                f"user function '{spec.function}' is not defined in users.py{_hint(spec.function, users)}",
            )
            return None
        if problem := _user_signature_problem(function, spec):
            self.problem(where, problem)
        return SimulatedUser(spec, function)

    def _files(self, place: str, files: Mapping[str, str | FileSource]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for target, content in files.items():
            where = f"{place}: files['{target}']"
            parts = Path(target).parts
            if not target or Path(target).is_absolute() or ".." in parts:
                self.problem(
                    where, "a sandbox file's path must be relative and stay inside the sandbox (no '..')"
                )
                continue
            if isinstance(content, str):
                out[target] = content.encode("utf-8")
                continue
            source = self.root / content.source
            if not self._inside(source, where):
                continue
            if not source.is_file():
                self.problem(where, f"source '{content.source}' is not a file of the bundle")
                continue
            if not self._small_enough(source, where):
                continue
            out[target] = source.read_bytes()
        return out

    def _small_enough(self, path: Path, where: str) -> bool:
        size = path.stat().st_size
        if size <= MAX_FILE_BYTES:
            return True
        self.problem(
            where,
            f"'{path.name}' is {size / 2**20:.0f} MiB, over the {MAX_FILE_BYTES // 2**20} MiB a bundle's "
            "file may be: split a task file into smaller splits, or keep big data out of sandbox files",
        )
        return False

    def _inside(self, path: Path, where: str) -> bool:
        if path.resolve().is_relative_to(self.root):
            return True
        self.problem(
            where, f"'{path}' leaves the bundle (through '..' or a symlink); keep every file inside it"
        )
        return False


def _user_signature_problem(function: Callable[..., Any], spec: UserFunction) -> str | None:
    """Why a user function cannot be called as `NAME(context, **args)` with its task's args, saying
    the signature it needs; None when it can (or has no signature to read: its call will say)."""
    try:
        signature = inspect.signature(function)
    except ValueError:
        return None
    name, args = spec.function, spec.args
    needed = (
        f"it is called as {name}(context, **args), so write `def {name}({', '.join(['context', *args])})`"
    )
    parameters = list(signature.parameters.values())
    first = parameters[0] if parameters else None
    positional = (Parameter.POSITIONAL_ONLY, Parameter.POSITIONAL_OR_KEYWORD, Parameter.VAR_POSITIONAL)
    if first is None or first.kind not in positional:
        return f"user function '{name}' has no first parameter for the context: {needed}"
    if first.name in args:
        return (
            f"user function '{name}' takes the task's arg '{first.name}' first, where the context goes: "
            f"{needed}"
        )
    try:
        signature.bind(None, **args)
    except TypeError as exc:
        return f"user function '{name}' cannot take the task's args {args}: {exc}; {needed}"
    return None


def _turns(count: int) -> str:
    return f"{count} turn{'s' if count != 1 else ''}"


def _hint(name: str, choices: Iterable[str]) -> str:
    choices = list(choices)
    if nearest := did_you_mean(name, choices):
        return nearest
    return f" (choices: {', '.join(sorted(choices))})" if choices else ""
