"""A bundle's tasks: `tasks/SPLIT.jsonl` (or `.json`) read into checked `Task`s, split by split,
each with its toolset, verifiers, sandbox files and simulated user."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_env._bundle.checks import check_access, checked_user, checked_verifiers, hint
from agent_env._bundle.folder import BundleFolder, too_long_a_prompt
from agent_env._bundle.judges import BundleJudges
from agent_env._contracts.mcp import McpEnvDefinition
from agent_env._contracts.users import USER_KINDS
from agent_env._env import EnvDefinition
from agent_env._error_types import validation_problems
from agent_env._task import Agent, BundleConfig, FileSource, Task, TaskEntry
from agent_env._toolset import AnyEnvDefinition, Toolset
from agent_env._verifiers import VERIFIER_TYPES, VerifierFunction

TASK_SUFFIXES = (".jsonl", ".json")
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Definitions:
    """What a bundle defines that its tasks name: its config, envs, agents, and the functions of its
    verifiers.py and users.py."""

    config: BundleConfig
    envs: Mapping[str, AnyEnvDefinition]
    agents: Mapping[str, Agent]
    functions: Mapping[str, VerifierFunction]
    users: Mapping[str, Callable[..., Any]]
    judges: BundleJudges

    @property
    def roles(self) -> set[str]:
        """Every role an agent plays or a tool (a Python env's, an MCP server's) is limited to."""
        roles = {a.role for a in self.config.agents.values()} | {
            role for env in self.envs.values() for t in env.tools or () for role in (t.roles or ())
        }
        roles |= {
            role
            for env in self.envs.values()
            if isinstance(env, McpEnvDefinition)
            for r in env.server.roles.values()
            for role in r
        }
        return roles


@dataclass(frozen=True)
class Splits:
    """The tasks of each split that load, and the id of every task each split's file lists."""

    tasks: dict[str, tuple[Task, ...]]
    """Split -> its tasks in index order."""
    listed: dict[str, frozenset[str]]
    """Split -> each task id its file lists, loaded or not: what names a task that did not load (its
    own problem, or its agent's, is reported) is no mistake of its own, so no problem of its own."""


def read_splits(folder: BundleFolder, defined: Definitions) -> Splits:
    """Each task file of `tasks/`, read into its split's tasks; task ids are unique across splits."""
    directory = folder.root / "tasks"
    files = sorted(f for f in directory.glob("*") if f.suffix in TASK_SUFFIXES) if directory.is_dir() else []
    splits: dict[str, tuple[Task, ...]] = {}
    listed: dict[str, frozenset[str]] = {}
    if not files:
        folder.problem(
            "tasks/", "no task files; add tasks/train.jsonl with one task (a JSON object) per line"
        )
        return Splits(splits, listed)
    roles = defined.roles
    seen_ids: dict[str, str] = {}
    for file in files:
        where = f"tasks/{file.name}"
        split = file.stem
        if split in splits:
            folder.problem(where, f"split '{split}' has two files; keep one of .jsonl and .json")
            continue
        if not _SPLIT_NAME.match(split):
            folder.problem(where, f"split name '{split}' must match {_SPLIT_NAME.pattern}; rename the file")
            continue
        lines = folder.entries(file, where)
        if lines is None:
            continue
        tasks: list[Task] = []
        ids: set[str] = set()
        entries = 0
        for line, raw in lines:
            entries += 1
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                ids.add(raw["id"])
            place = f"{where}:{line}" if line else where
            task = _task(folder, place, raw, split, len(tasks), defined, roles)
            if task is None:
                continue
            if task.id in seen_ids:
                folder.problem(
                    place, f"duplicate task id '{task.id}' (first at {seen_ids[task.id]}); ids must be unique"
                )
                continue
            seen_ids[task.id] = place
            tasks.append(task)
        if not entries and not folder.reported(where):
            folder.problem(where, f"split '{split}' has no tasks; add one per line or delete the file")
        splits[split] = tuple(tasks)
        listed[split] = frozenset(ids)
    return Splits(splits, listed)


def _task(
    folder: BundleFolder, place: str, raw: Any, split: str, index: int, defined: Definitions, roles: set[str]
) -> Task | None:
    try:
        entry = TaskEntry.model_validate(raw)
    except ValidationError as exc:
        label = f" (task '{raw['id']}')" if isinstance(raw, dict) and isinstance(raw.get("id"), str) else ""
        for message in validation_problems(exc, noun="field", tags=(*VERIFIER_TYPES, *USER_KINDS)):
            folder.problem(f"{place}{label}", message)
        return None
    place = f"{place} (task '{entry.id}')"
    before = len(folder.problems)
    for number, prompt in enumerate(entry.turns, start=1):
        if (why := too_long_a_prompt(prompt)) is not None:
            folder.problem(f"{place}: turns[{number - 1}]", why)
    config, envs = defined.config, defined.envs
    agent = defined.agents.get(entry.agent)
    if agent is None:
        if entry.agent not in config.agents:
            folder.problem(place, f"agent '{entry.agent}' is not defined{hint(entry.agent, config.agents)}")
        return None  # else its agent's toolset cannot be built: that one problem is reported, not one a task
    for env in entry.seed:
        if env not in agent.envs:
            folder.problem(
                place,
                f"seed names env '{env}', which agent '{agent.name}' does not use" + hint(env, agent.envs),
            )
        elif isinstance(server := envs.get(env), McpEnvDefinition) and server.server.url is not None:
            folder.problem(
                place,
                f"seed names env '{env}', an MCP server every episode shares (a url): it takes no "
                "task's seed; seed a stdio server (given AGENT_ENV_SEED), or keep its data on the server",
            )
    _check_seeds(folder, place, entry.seed, agent, envs)
    check_access(folder, place, entry.modify_env_tool_access, agent, envs, roles)
    verifiers = defined.judges.resolved(
        place, checked_verifiers(folder, place, entry, agent, envs, defined.functions)
    )
    files = _files(folder, place, entry.files)
    user = checked_user(folder, place, entry, defined.users)
    if len(folder.problems) > before:
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


def _check_seeds(
    folder: BundleFolder,
    place: str,
    seed: Mapping[str, Any],
    agent: Agent,
    envs: Mapping[str, AnyEnvDefinition],
) -> None:
    """Each of the agent's envs whose `setup` declares its seed's shape gets a seed of that shape (an
    env the task seeds nothing gets `{}`): a wrong one is found here, not at the first reset."""
    for name in agent.envs:
        env = envs.get(name)
        if not isinstance(env, EnvDefinition) or env.seed_shape is None:
            continue
        try:
            env.seed_for(seed.get(name, {}))
        except ValidationError as exc:
            declared = f"(the seed {env.cls.__name__}.setup declares)"
            for message in validation_problems(exc, noun="field"):
                folder.problem(f"{place}: seed['{name}']", f"{message} {declared}")


def _files(folder: BundleFolder, place: str, files: Mapping[str, str | FileSource]) -> dict[str, bytes]:
    """A task's sandbox files, by their path in the sandbox: given inline, or read from the bundle."""
    out: dict[str, bytes] = {}
    for target, content in files.items():
        where = f"{place}: files['{target}']"
        parts = Path(target).parts
        if not target or Path(target).is_absolute() or ".." in parts:
            folder.problem(
                where, "a sandbox file's path must be relative and stay inside the sandbox (no '..')"
            )
            continue
        if isinstance(content, str):
            out[target] = content.encode("utf-8")
            continue
        source = folder.root / content.source
        if not folder.inside(source, where):
            continue
        if not source.is_file():
            folder.problem(where, f"source '{content.source}' is not a file of the bundle")
            continue
        data = folder.read(source, where)
        if data is not None:
            out[target] = data
    return out
