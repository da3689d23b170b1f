"""Harbor task folders read as a bundle's parts: each task's prompt, container, verifier and
reference play, checked at load with every problem named by its task folder and how to fix it.

A task folder holds instruction.md and task.toml, environment/ (a Dockerfile) or an
`[environment] docker_image`, tests/test.sh and, optionally, solution/solve.sh. A dataset is a folder
of task folders. `agent_env._loading.load_bundle` hands a path here when it names one (detected by
those files, or written `harbor:PATH`), and makes the `Bundle` of what `read_harbor` returns.

A task folder with a problem stops the load, unless it is asked to skip the tasks that do not load
(`skip_broken_tasks`): each such task folder is then left out, with its problems, and the others
load. A problem that is no one task's (agent-env-splits.toml, no Docker engine) stops it still.

Every task is in split `train` unless `agent-env-splits.toml`, beside the task folders, maps task
folders to splits (`eval = ["task-a", "task-b"]`); the tasks it does not name stay in `train`.

Every file is read by a bundle's one rule (`agent_env._bundle.folder`): one that is a link out of the
folder loaded is refused unread (a prompt goes to model endpoints and into recordings), and
instruction.md is a prompt, capped at `MAX_PROMPT_BYTES`.
"""

from __future__ import annotations

import logging
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent_env._bundle.folder import PROMPT_CAP, BundleFolder
from agent_env._concurrency import build_concurrency as build_concurrency_of
from agent_env._contracts.sandbox_settings import SandboxConfig
from agent_env._digest import folder_digest
from agent_env._error_types import Problem, SkippedTask, validation_problems
from agent_env._specs import DEFAULT_ROLE, ScriptedCall, ScriptedTurn, Solution
from agent_env._task import Agent, AgentConfig, BundleConfig, Task
from agent_env._toolset import Toolset
from agent_env._verifiers import ScriptCheck, Verifier
from agent_env.harbor._compose import COMPOSE_FILES, compose_problems
from agent_env.harbor._config import TaskToml, resolve_env
from agent_env.harbor._fetching import network_fetches
from agent_env.harbor._fields import not_applied, phase_networks, refusals
from agent_env.harbor._notes import UNKNOWN, DatasetNotes
from agent_env.harbor._resources import CLAMPED, EngineLimits
from agent_env.harbor._verifier import TEST_SCRIPT, Collect, HarborTests

if TYPE_CHECKING:
    from agent_env.sandbox._docker_build import TaskImage

PREFIX = "harbor:"
"""Written before a path (`harbor:tasks/`), it names Harbor task folders whatever they hold."""
SPLITS_FILE = "agent-env-splits.toml"
DEFAULT_SPLIT = "train"
DEFAULT_COMMAND_TIMEOUT_S = 600.0
"""One bash command's deadline when the task gives no [agent] timeout_sec."""
ROOT_CAPABILITIES = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "NET_BIND_SERVICE",
)
"""What root keeps in a Harbor task's container, as in Harbor's own (Docker's defaults, less raw
sockets, device nodes, audit and file capabilities): tasks install and chown as root."""
MAX_TESTS_BYTES = 64 * 2**20
_AGENT = Agent("agent", envs=(), role=DEFAULT_ROLE, bash=True)
_SOLUTION_END = "AGENT_ENV_SOLUTION_EOF"
FETCHES_OFFLINE = (
    "tests/test.sh fetches from the network in {count} whose verifier has no network: {tasks}. Their "
    "episodes will likely be unscorable or score 0 whatever the agent did; to give test.sh a network, "
    'write [verifier] network_mode = "public" in their task.toml and serve with --allow-internet'
)

log = logging.getLogger("agent_env.harbor")


@dataclass(frozen=True)
class HarborTasks:
    """What a folder of Harbor tasks makes: a bundle's parts, for `load_bundle` to assemble."""

    name: str
    path: Path
    config: BundleConfig
    splits: Mapping[str, tuple[Task, ...]]
    content_digest: str
    solutions: Mapping[str, Mapping[str, Solution]] = field(default_factory=dict)
    agents: Mapping[str, Agent] = field(default_factory=lambda: {_AGENT.name: _AGENT})
    skipped: tuple[SkippedTask, ...] = ()
    """The task folders left out, each with its problems, when asked to skip those that do not load."""


def harbor_folder(path: str | Path) -> Path | None:
    """The folder of Harbor tasks `path` names (explicitly, `harbor:PATH`, or by its files), else None."""
    text = str(path)
    if text.startswith(PREFIX):
        return Path(text.removeprefix(PREFIX))
    folder = Path(path)
    if (folder / "bundle.toml").exists() or not folder.is_dir():
        return None
    if _is_task(folder):
        return folder
    return folder if any(_is_task(child) for child in _children(folder)) else None


def _is_task(folder: Path) -> bool:
    """A folder meant as a task: it has either file of one (the other, if missing, is a problem)."""
    return (folder / "task.toml").is_file() or (folder / "instruction.md").is_file()


def _children(folder: Path) -> list[Path]:
    return sorted(child for child in folder.iterdir() if child.is_dir() and not child.name.startswith("."))


def read_harbor(
    path: Path,
    *,
    build: bool = True,
    client: Any = None,
    skip_broken_tasks: bool = False,
    build_concurrency: int | None = None,
) -> tuple[HarborTasks | None, list[Problem]]:
    """The tasks under `path` (one task folder, or a folder of them), and every problem that stops
    their load (then None). With `build`, each task's image is built (or found) in the Docker engine
    (`client`, default: the one DOCKER_HOST names), which a problem names when it cannot:
    `build_concurrency` at once (default: $AGENTENV_BUILD_CONCURRENCY, else twice the cores, at most
    8), each build context once. The tasks' CPUs and memory are checked against that engine, and
    without `build` against the one reachable, if any. What the load notes beyond its problems is
    logged once, a line per kind (`agent_env.harbor._notes`). With `skip_broken_tasks`, the task
    folders of a dataset whose problems are all their own are left out (`HarborTasks.skipped`) and
    the others load; problems no one task has, or none left to load, still stop it."""
    reader = _Reader(path, build, client, skip_broken_tasks, build_concurrency_of(build_concurrency))
    try:
        return reader.read()
    finally:
        reader.notes.log()


@dataclass(frozen=True)
class _Checked:
    """A task folder whose files loaded: what its task is made of once its image is there."""

    folder: Path
    where: str
    config: TaskToml
    instruction: str
    tests: Mapping[str, bytes]
    env: Mapping[str, str]
    verifier_env: Mapping[str, str]
    solution_env: Mapping[str, str]


class _Reader:
    def __init__(self, path: Path, build: bool, client: Any, skip: bool = False, builds: int = 1) -> None:
        self.shown = str(path)
        self.root = path.resolve()
        self.build = build
        self.client = client
        self.builds = builds
        self.skip = skip
        self.names: list[str] = []
        """A dataset's task folders, by name (none for a single task folder: nothing to skip to)."""
        self.broken: dict[str, list[Problem]] = {}
        """The task folders left out, each with its problems, when skipping those that do not load."""
        self.folder = BundleFolder(self.root, MAX_TESTS_BYTES, kind="task folder")
        """Every file is read by its rule: inside the folder (no link out of it), regular, capped."""
        self.problems: list[Problem] = self.folder.problems
        self.notes = DatasetNotes()

    def problem(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

    def read(self) -> tuple[HarborTasks | None, list[Problem]]:
        if not self.root.is_dir():
            self.problem(
                "", f"{self.shown} is not a folder of Harbor tasks (task.toml and instruction.md in each)"
            )
            return None, self.problems
        single = (self.root / "task.toml").exists() or (self.root / "instruction.md").exists()
        folders = [self.root] if single else [c for c in _children(self.root) if _is_task(c)]
        if not folders:
            self.problem(
                "",
                f"{self.shown} holds no Harbor task: a task folder has task.toml and instruction.md, and a "
                "dataset is a folder of task folders",
            )
            return None, self.problems
        self.names = [] if single else [f.name for f in folders]
        checked = [self._checked(folder, "" if single else f"{folder.name}/") for folder in folders]
        splits_of = self._splits([f.name for f in folders]) if not single else {}
        if not self._goes_on():  # no image is built for a dataset that does not load
            return None, self.problems
        fitted = self._fitted([one for one in checked if one is not None])  # None: left out, broken
        if not self._goes_on():
            return None, self.problems
        fitted = [one for one in fitted if one.folder.name not in self.broken]  # memory the engine lacks
        images, held = self._images(fitted) if self.build else ({}, {})
        tasks: dict[str, tuple[Task, Solution | None]] = {}
        for one in fitted:
            self.problems.extend(held.get(one.folder, ()))  # each task's problems in the tasks' order
            made = self._made(one, images.get(one.folder))
            if made is not None:
                tasks[one.folder.name] = made
        if not self._goes_on():
            return None, self.problems
        tasks = {name: made for name, made in tasks.items() if name not in self.broken}
        grouped: dict[str, list[str]] = {}
        for name in tasks:
            grouped.setdefault(splits_of.get(name, DEFAULT_SPLIT), []).append(name)
        splits: dict[str, tuple[Task, ...]] = {}
        solutions: dict[str, dict[str, Solution]] = {}
        for split, names in grouped.items():
            placed = []
            for index, name in enumerate(names):
                task, solution = tasks[name]
                placed.append(_placed(task, split, index))
                if solution is not None:
                    solutions.setdefault(split, {})[task.id] = solution
            splits[split] = tuple(placed)
        name = self.root.name
        config = BundleConfig(
            name=name,
            description=f"Harbor tasks from {name}",
            agents={_AGENT.name: AgentConfig(bash=True)},
            sandbox=SandboxConfig(provider="docker"),
        )
        skipped = tuple(
            SkippedTask(name, tuple(self.broken[name])) for name in self.names if name in self.broken
        )
        return HarborTasks(
            name, self.root, config, splits, folder_digest(self.root), solutions, skipped=skipped
        ), []

    def _goes_on(self) -> bool:
        """Whether the load goes on after the problems found so far: there are none, or, skipping the
        tasks that do not load, every one is a task folder's own (`broken`, then left out) and some
        task folder has none."""
        owners = [self._owner(problem) for problem in self.problems]
        if owners and (not self.skip or None in owners):
            return False
        self.broken = {}
        for owner, problem in zip(owners, self.problems, strict=True):
            assert owner is not None
            self.broken.setdefault(owner, []).append(problem)
        if self.names and len(self.broken) == len(self.names):
            self.problem(
                "",
                f"none of its {len(self.names)} tasks loads, so skipping those that do not leaves "
                "nothing: fix them (each problem is listed here)",
            )
            return False
        return True

    def _owner(self, problem: Problem) -> str | None:
        """The task folder a problem is in, by its place (`task-folder/task.toml`); None for the
        dataset's own (agent-env-splits.toml, the engine) and a single task folder's."""
        head = problem.where.partition("/")[0]
        return head if head in self.names else None

    def _checked(self, folder: Path, where: str) -> _Checked | None:
        """The task folder's files, read and checked; None (with its problems) when they do not load."""
        before = len(self.problems)
        instruction = folder / "instruction.md"
        text = None
        if not instruction.is_file():
            self.problem(f"{where}instruction.md", "missing: write the task's prompt for the agent in it")
        else:
            text = self.folder.read_text(instruction, f"{where}instruction.md", PROMPT_CAP)
        config = self._config(folder, where)
        for part, why in (
            ("steps", "multi-step tasks (steps/) are not supported: keep one instruction.md per task"),
            (
                "tests/Dockerfile",
                "a separate verifier environment is not supported: test.sh runs in the task's",
            ),
        ):
            if (folder / part).exists():
                self.problem(f"{where}{part}", why)
        self._compose(folder / "environment", f"{where}environment/")
        if not (folder / "tests" / "test.sh").is_file():
            self.problem(
                f"{where}tests/test.sh",
                "missing: write the script that checks the work and writes "
                "/logs/verifier/reward.txt (a number) or reward.json (named numbers)",
            )
        if config is None or len(self.problems) > before:
            return None
        environment = config.environment
        if environment.docker_image is None and not (folder / "environment" / "Dockerfile").is_file():
            self.problem(
                f"{where}environment/Dockerfile",
                "missing: write the task's Dockerfile there, or name an image in [environment] docker_image",
            )
            return None
        env, missing = resolve_env(environment.env)
        verifier_env, missing_too = resolve_env(config.verifier.env)
        solution_env, missing_also = resolve_env(config.solution.env)
        for variable in sorted({*missing, *missing_too, *missing_also}):
            self.problem(
                f"{where}task.toml",
                f"uses ${{{variable}}}, which is not set here: set it, or give a default "
                f"(${{{variable}:-value}})",
            )
        if environment.docker_image is None:
            self._environment(folder / "environment", f"{where}environment/")
        tests = self._files(folder / "tests", f"{where}tests/")
        if len(self.problems) > before or tests is None or text is None:
            return None
        script = _text(tests.get("test.sh", b"")) or ""
        fetches = network_fetches(script)
        if fetches and not phase_networks(config).verifier:
            self.notes.task(FETCHES_OFFLINE, f"{folder.name} ({', '.join(fetches)})")
        return _Checked(folder, where, config, text, tests, env, verifier_env, solution_env)

    def _compose(self, environment: Path, where: str) -> None:
        """A problem for each thing a compose file in environment/ says beyond its Dockerfile."""
        for name in COMPOSE_FILES:
            file = environment / name
            if file.is_file():
                text = self.folder.read_text(file, f"{where}{name}")
                for why in compose_problems(text) if text is not None else []:
                    self.problem(f"{where}{name}", why)

    def _fitted(self, checked: list[_Checked]) -> list[_Checked]:
        """The tasks with their CPUs clamped to the engine's (said once) and a problem for memory it
        does not have, when an engine is there to ask; as they are when none is."""
        limits = self._limits() if checked else None
        if limits is None:
            return checked
        fitted = []
        for one in checked:
            problem = limits.memory_problem(one.config)
            if problem is not None:
                self.problem(f"{one.where}task.toml: environment.memory_mb", problem)
            clamped = limits.clamped(one.config)
            if clamped is not None:
                clamp = CLAMPED.format(cpus=limits.cpus, count="{count}", tasks="{tasks}")
                self.notes.task(clamp, f"{one.folder.name} ({one.config.environment.cpus:g})")
                one = replace(one, config=clamped)
            fitted.append(one)
        return fitted

    def _limits(self) -> EngineLimits | None:
        """The engine's CPUs and memory: the one the images are built in, else (without `build`) the
        one reachable; None without one (or one that does not say)."""
        if self.client is None and not self.build:
            from agent_env._error_types import SandboxUnavailableError
            from agent_env.sandbox._docker_engine import docker_client

            try:
                self.client = docker_client()
            except SandboxUnavailableError as exc:
                log.info("the tasks' cpus and memory_mb are not checked against a Docker engine: %s", exc)
                return None
        client = self._engine()
        return None if client is None else EngineLimits.of(client)

    def _made(self, checked: _Checked, built: TaskImage | None) -> tuple[Task, Solution | None] | None:
        """The task and its reference play, given its image (built or found); None if it has none."""
        folder, where, config, env = checked.folder, checked.where, checked.config, checked.env
        environment = config.environment
        workdir = environment.workdir
        image = environment.docker_image or "agent-env-harbor:unbuilt"
        if self.build:
            if built is None:
                return None
            image, workdir = built.tag, workdir or built.workdir
        workdir = workdir or "/"
        time_limit = config.agent.timeout_sec
        phases = phase_networks(config)
        settings = SandboxConfig(
            provider="docker",
            image=image,
            workdir=workdir,
            cpus=environment.cpus,
            memory_mb=environment.memory_mb,
            storage_mb=environment.storage_mb,
            network=phases.agent,
            verifier_network=phases.verifier if phases.verifier != phases.agent else None,
            capabilities=ROOT_CAPABILITIES,
            environment=tuple(env.items()),
            user="0:0",
            pids_limit=1024,
            command_timeout_s=time_limit or DEFAULT_COMMAND_TIMEOUT_S,
            may_change=config.agent_env.may_change,
        )
        check = ScriptCheck(type="test_script", script=TEST_SCRIPT, timeout_s=config.verifier.timeout_sec)
        collect = tuple(Collect(c.command, c.timeout_sec) for c in config.verifier.collect)
        run = HarborTests(
            folder.name, checked.tests, config.verifier.timeout_sec, workdir, checked.verifier_env, collect
        )
        task = Task(
            id=folder.name,
            split=DEFAULT_SPLIT,
            index=0,
            agent=_AGENT,
            turns=(checked.instruction,),
            toolset=Toolset(envs=(), role=DEFAULT_ROLE, access=(), bash=True),
            verifiers=(Verifier(check, run),),
            sandbox_settings=settings,
            time_limit_s=time_limit,
        )
        solution = self._solution(folder, where, workdir, checked.solution_env)
        return task, solution

    def _config(self, folder: Path, where: str) -> TaskToml | None:
        file = folder / "task.toml"
        if not file.is_file():
            self.problem(
                f"{where}task.toml",
                "missing: write the task's settings in it ([agent], [verifier], [environment])",
            )
            return None
        text = self.folder.read_text(file, f"{where}task.toml")
        if text is None:
            return None
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.problem(f"{where}task.toml", f"malformed TOML: {exc}; fix its syntax")
            return None
        try:
            config = TaskToml.model_validate(raw)
        except ValidationError as exc:
            for message in validation_problems(exc, noun="field"):
                self.problem(f"{where}task.toml", message)
            return None
        for name in config.unknown_fields():
            self.notes.field(UNKNOWN, name, folder.name)
        for field_name, why in refusals(config):
            self.problem(f"{where}task.toml: {field_name}", why)
        for field_name, why in not_applied(config):
            self.notes.field(why, field_name, folder.name)
        return config

    def _files(self, folder: Path, where: str) -> dict[str, bytes] | None:
        """Every file of tests/ or solution/, by its path there; None (with a problem) if one leads out
        of the folder or they hold too much."""
        if not self._inside(folder, where):
            return None
        files: dict[str, bytes] = {}
        total = 0
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            total += file.stat().st_size
            if total > MAX_TESTS_BYTES:
                self.problem(where, f"holds over {MAX_TESTS_BYTES // 2**20} MiB: keep big data in the image")
                return None
            content = self.folder.read(file, f"{where}{file.relative_to(folder).as_posix()}")
            if content is None:
                return None
            files[file.relative_to(folder).as_posix()] = content
        return files

    def _environment(self, folder: Path, where: str) -> None:
        """environment/, the image's build context, read at load (its digest names the image) and sent
        to the engine: a problem for each of its files or links that leads out of the folder."""
        if folder.exists():
            self._inside(folder, where)

    def _inside(self, folder: Path, where: str) -> bool:
        """Whether `folder` and everything under it (its links too, to files or folders) stays inside
        the folder loaded; a problem for each that does not."""
        if not self.folder.inside(folder, where.rstrip("/")):
            return False
        inside = True
        for entry in sorted(folder.rglob("*")):
            if entry.is_symlink() or entry.is_file():
                inside &= self.folder.inside(entry, f"{where}{entry.relative_to(folder).as_posix()}")
        return inside

    def _engine(self) -> Any:
        """The Docker engine's client, made at the first task; None (with a problem, once) without one."""
        from agent_env._error_types import SandboxUnavailableError
        from agent_env.sandbox._docker_engine import docker_client

        if self.client is None and self.build:
            try:
                self.client = docker_client()
            except SandboxUnavailableError as exc:
                self.problem(  # no one task's problem: it stops the load, skipping or not
                    "", f"Harbor tasks run in Docker, and their images are built at load: {exc}"
                )
                self.build = False  # one such problem is enough
        return self.client

    def _images(self, checked: Sequence[_Checked]) -> tuple[dict[Path, TaskImage], dict[Path, list[Problem]]]:
        """Each task's image, built (or found) `self.builds` at a time, each build context once; and
        each task's problem when it has none, to be told in the tasks' order whichever build ended
        first."""
        from agent_env.sandbox._docker_build import ImageRequest, TaskImage, task_images

        if not checked or self._engine() is None:
            return {}, {}
        requests = [
            ImageRequest(
                one.folder / "environment",
                one.config.environment.docker_image,
                one.config.environment.build_timeout_sec,
            )
            for one in checked
        ]
        images: dict[Path, TaskImage] = {}
        held: dict[Path, list[Problem]] = {}
        for one, got in zip(checked, task_images(self.client, requests, self.builds), strict=True):
            if isinstance(got, TaskImage):
                images[one.folder] = got
            else:
                held[one.folder] = [Problem(f"{one.where}environment/", str(got))]
        return images, held

    def _solution(self, folder: Path, where: str, workdir: str, env: Mapping[str, str]) -> Solution | None:
        """solution/ as the reference play: one bash call that copies it to /solution and runs solve.sh."""
        solve = folder / "solution" / "solve.sh"
        if not solve.is_file():
            return None
        files = self._files(folder / "solution", f"{where}solution/")
        if files is None:
            return None
        lines = ["mkdir -p /solution"]
        for relative, content in files.items():
            target = shlex.quote(f"/solution/{relative}")
            if "/" in relative:
                lines.append(f"mkdir -p {shlex.quote(str(Path('/solution', relative).parent))}")
            text = _text(content)
            if text is not None and _SOLUTION_END not in text:
                lines.append(f"cat > {target} <<'{_SOLUTION_END}'\n{text.rstrip(chr(10))}\n{_SOLUTION_END}")
            else:
                import base64

                lines.append(f"printf %s '{base64.b64encode(content).decode()}' | base64 -d > {target}")
        exports = "".join(f"export {name}={shlex.quote(value)}; " for name, value in env.items())
        lines.append(f"cd {shlex.quote(workdir)} && {exports}bash /solution/solve.sh")
        call = ScriptedCall(tool="bash", arguments={"command": "\n".join(lines)})
        return Solution(id=folder.name, turns=[ScriptedTurn(calls=[call], reply="done")])

    def _splits(self, names: list[str]) -> dict[str, str]:
        file = self.root / SPLITS_FILE
        if not file.is_file():
            return {}
        text = self.folder.read_text(file, SPLITS_FILE)
        if text is None:
            return {}
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.problem(SPLITS_FILE, f"malformed TOML: {exc}")
            return {}
        placed: dict[str, str] = {}
        for split, tasks in raw.items():
            if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
                self.problem(SPLITS_FILE, f"split '{split}' must be a list of task folder names")
                continue
            for name in tasks:
                if name not in names:
                    self.problem(SPLITS_FILE, f"split '{split}' names '{name}', which is no task folder here")
                elif name in placed:
                    self.problem(
                        SPLITS_FILE, f"task '{name}' is in splits '{placed[name]}' and '{split}': keep one"
                    )
                else:
                    placed[name] = split
        return placed


def _placed(task: Task, split: str, index: int) -> Task:
    from dataclasses import replace

    return replace(task, split=split, index=index)


def _text(content: bytes) -> str | None:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None
