"""The parts the engine runs, found by name among the installed packages' entry points.

The engine never imports a part: it asks here for what it needs by name, and each part registers
what answers as an entry point of the group `agent_env.parts` (this distribution's own are in its
pyproject.toml; from a checkout, read there, since installed metadata can be older than the tree).
That is Python's own plugin mechanism, so another installed package can add a sandbox provider
(`sandbox.NAME = "package.module:factory"`) without a change to agent_env; a name this distribution
registers is always its own.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_env._contracts.judges import (
    EpisodeJudge,
    GroupInvite,
    GroupSeating,
    Judge,
    Judged,
    Judgements,
    Scope,
    Seat,
)
from agent_env._contracts.mcp import McpEnvDefinition, ServerEnv, ServerStarter
from agent_env._contracts.sandbox import SandboxProvider
from agent_env._contracts.sandbox_settings import SandboxConfig, SandboxFactory
from agent_env._contracts.users import User, UserFunction, UserMaker, UserModel
from agent_env._errors import AgentEnvError, ArgumentError
from agent_env._extras import DISTRIBUTION

if TYPE_CHECKING:
    from agent_env._trajectory import TurnRecord

GROUP = "agent_env.parts"
SANDBOX_PREFIX = "sandbox."
LOADER_PREFIX = "loaders."


class PartMissingError(AgentEnvError, LookupError):
    """A part this distribution registers is not found: its entry points are not installed."""


def _ours(entry: EntryPoint) -> bool:
    dist = entry.dist
    return dist is not None and dist.name.replace("_", "-").lower() == DISTRIBUTION


def _source_tree_parts() -> list[EntryPoint] | None:
    """This distribution's parts as its source tree's pyproject.toml declares them, when agent_env runs
    from a checkout (installed editable, or on the path): the installed metadata can be older than the
    tree (a stale *.egg-info in the checkout shadows it), the tree never is. None when installed."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if project.get("project", {}).get("name") != DISTRIBUTION:
        return None
    declared = project["project"].get("entry-points", {}).get(GROUP, {})
    return [EntryPoint(name, value, GROUP) for name, value in declared.items()]


@functools.cache
def own_parts() -> Mapping[str, EntryPoint]:
    """This distribution's parts by name, read without the other packages' metadata (a process that
    names only these never reads it: some 10 to 20 ms, measured in docs/performance.md)."""
    declared = _source_tree_parts()
    if declared is None:
        try:
            declared = list(distribution(DISTRIBUTION).entry_points.select(group=GROUP))
        except PackageNotFoundError:
            declared = []
    return {entry.name: entry for entry in sorted(declared, key=lambda entry: entry.name)}


@functools.cache
def registered() -> Mapping[str, EntryPoint]:
    """Every part by name; this distribution's first, so that a name it registers stays its own."""
    found = dict(own_parts())
    for entry in entry_points(group=GROUP):
        if not _ours(entry):
            found.setdefault(entry.name, entry)
    return found


@functools.cache
def part(name: str) -> Any:
    """What the part registered as `name` answers with, loaded once."""
    entry = own_parts().get(name) or registered().get(name)
    if entry is None:
        raise PartMissingError(
            f"no part '{name}' is registered in the entry points '{GROUP}': agent_env runs installed, "
            "so that its parts are found; install it (`pip install -e .` in a checkout, or `make install`)"
        )
    return entry.load()


def registered_under(prefix: str) -> tuple[str, ...]:
    """The names registered as `prefix` + NAME, without the prefix: this distribution's, then others'."""
    return tuple(name.removeprefix(prefix) for name in registered() if name.startswith(prefix))


def sandbox_names() -> tuple[str, ...]:
    """The sandbox providers a bundle or the CLI can name: this distribution's, then others'."""
    return registered_under(SANDBOX_PREFIX)


def is_sandbox_name(name: str) -> bool:
    """Whether a provider is registered as `name` (another package's metadata read only for a name
    this distribution does not register)."""
    return SANDBOX_PREFIX + name in own_parts() or name in sandbox_names()


def sandbox_provider(
    name: str | SandboxProvider, settings: SandboxConfig | None = None, *, allow_network: bool = False
) -> SandboxProvider:
    """The provider called `name`, made with `settings` (a provider passes through unchanged).

    With `allow_network`, its sandboxes have a network when the settings ask for one (Docker's).
    """
    if not isinstance(name, str):
        return name
    if not is_sandbox_name(name):
        raise ArgumentError(f"unknown sandbox provider '{name}'; choose one of: {', '.join(sandbox_names())}")
    factory: SandboxFactory = part(SANDBOX_PREFIX + name)
    return factory(settings or SandboxConfig(provider=name), allow_network=allow_network)


async def start_server(
    definition: McpEnvDefinition, *, folder: Path | None, seed: Mapping[str, Any] | None
) -> ServerEnv:
    """An episode's session with the MCP env's server, its tools listed (the `mcp` part's `mcp.start`,
    which imports the MCP SDK: only an episode with an MCP env comes here); `folder`: where a stdio
    server works, the sandbox's when it is on this host."""
    start: ServerStarter = part("mcp.start")
    return await start(definition, folder=folder, seed=seed)


def simulated_user(spec: UserFunction | UserModel, function: Callable[..., Any] | None = None) -> User:
    """The user a task's `user` declares (the `users` part's `users.simulated`): a chat model's, or
    the bundle's `function` of users.py that its spec names."""
    make: UserMaker = part("users.simulated")
    return make(spec, function)


async def judge_episode(
    judge: Judge,
    *,
    judging: Judgements | None,
    system_prompt: str | None,
    turns: list[TurnRecord],
    seat: Seat | None,
) -> tuple[Judged, int]:
    """The judge's verdict on one episode and how many episodes it read together (the `judges` part's
    `judges.episode`: through `judging`, else the process's own; beside its group at `seat`)."""
    judged: EpisodeJudge = part("judges.episode")
    return await judged(judge, judging=judging, system_prompt=system_prompt, turns=turns, seat=seat)


def group_seat(judging: Judgements | None, invite: GroupInvite, scope: Scope) -> Seat:
    """An episode's seat in the GRPO group `invite` names (the `judges` part's `judges.seat`)."""
    seating: GroupSeating = part("judges.seat")
    return seating(judging, invite, scope)
