"""The cross-checks of a bundle: each name one part gives (an agent's envs, a task's access changes,
verifiers and user) against what another part defines, with the nearest name when one is misspelt."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from inspect import Parameter
from typing import Any

from agent_env._bundle.folder import BundleFolder, too_long_a_prompt
from agent_env._contracts.mcp import McpEnvDefinition
from agent_env._contracts.registry import simulated_user
from agent_env._contracts.users import User, UserFunction, UserModel
from agent_env._error_types import EpisodeError
from agent_env._extras import install_line, installed
from agent_env._nearest import did_you_mean
from agent_env._specs import AccessChange
from agent_env._task import Agent, AgentConfig, BundleConfig, TaskEntry
from agent_env._toolset import AnyEnvDefinition
from agent_env._verifiers import FunctionCheck, ItemsCheck, Verifier, VerifierFunction, verifier_place


def hint(name: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for a near name, else the choices, else nothing: what follows a name
    that is not one of `choices`."""
    choices = list(choices)
    if nearest := did_you_mean(name, choices):
        return nearest
    return f" (choices: {', '.join(sorted(choices))})" if choices else ""


def turns(count: int) -> str:
    return f"{count} turn{'s' if count != 1 else ''}"


def checked_agents(
    folder: BundleFolder, config: BundleConfig, envs: Mapping[str, AnyEnvDefinition]
) -> dict[str, Agent]:
    """The agents of bundle.toml whose envs are all defined and whose tools have distinct names."""
    agents: dict[str, Agent] = {}
    for name, agent in config.agents.items():
        where = f"bundle.toml: agents.{name}"
        ok = True
        for env in agent.envs:
            if env not in envs:
                ok = False
                if any((folder.root / "envs" / f"{env}{suffix}").exists() for suffix in (".py", ".toml")):
                    continue  # its module or server failed to load; that problem is already reported
                if config.mcp.get(env) is not None:
                    continue
                folder.problem(where, f"names env '{env}', which is not defined{hint(env, envs)}")
        if agent.system_prompt is not None and (why := too_long_a_prompt(agent.system_prompt)) is not None:
            ok = False
            folder.problem(f"{where}.system_prompt", why)
        if ok:
            ok = _no_tool_clashes(folder, where, agent, envs)
        if ok:
            agents[name] = Agent(name, agent.envs, agent.role, agent.bash, agent.system_prompt)
    return agents


def _no_tool_clashes(
    folder: BundleFolder, where: str, agent: AgentConfig, envs: Mapping[str, AnyEnvDefinition]
) -> bool:
    """Whether the agent's envs' tools have distinct names (an MCP env's are checked once listed)."""
    owner: dict[str, str] = {}
    for env in agent.envs:
        for tool in envs[env].tools or ():
            if tool.name in owner:
                folder.problem(
                    where,
                    f"envs '{owner[tool.name]}' and '{env}' both define tool '{tool.name}'; "
                    "rename one, since an agent's tools need distinct names",
                )
                return False
            owner[tool.name] = env
    return True


def check_access(
    folder: BundleFolder,
    place: str,
    changes: Iterable[AccessChange],
    agent: Agent,
    envs: Mapping[str, AnyEnvDefinition],
    roles: set[str],
) -> None:
    """Each access change's role, env and tools are ones the task's agent has."""
    for n, change in enumerate(changes):
        where = f"{place}: modify_env_tool_access[{n}]"
        if change.role not in roles:
            folder.problem(
                where, f"role '{change.role}' is not used by any agent or tool{hint(change.role, roles)}"
            )
        if change.env is not None and change.env not in agent.envs:
            folder.problem(
                where,
                f"env '{change.env}' is not one of agent '{agent.name}''s envs"
                + hint(change.env, agent.envs),
            )
            continue
        scope = [change.env] if change.env else list(agent.envs)
        if change.tools == "*" or any(envs[e].tools is None for e in scope):
            continue  # an MCP env's tools are known once listed: the deploy checks these names
        known = {t.name for e in scope for t in envs[e].tools or ()}
        for name in change.tools:
            if name not in known:
                folder.problem(where, f"tool '{name}' is not a tool of {', '.join(scope)}{hint(name, known)}")


def checked_verifiers(
    folder: BundleFolder,
    place: str,
    entry: TaskEntry,
    agent: Agent,
    envs: Mapping[str, AnyEnvDefinition],
    functions: Mapping[str, VerifierFunction],
) -> tuple[Verifier, ...]:
    """The task's verifiers, each env and function it names checked against the bundle's."""
    verifiers = []
    for n, spec in enumerate(entry.verifiers):
        where = f"{place}: {verifier_place(n)}"
        if isinstance(spec, ItemsCheck):
            if spec.env not in agent.envs:
                folder.problem(
                    where,
                    f"verifier 'items' names env '{spec.env}'{hint(spec.env, agent.envs)} "
                    f"(agent '{agent.name}' uses: {', '.join(agent.envs) or 'no envs'})",
                )
            else:
                _items_source(folder, where, spec, envs[spec.env])
        if isinstance(spec, FunctionCheck):
            function = functions.get(spec.function)
            if function is None:
                folder.problem(
                    where,
                    f"verifier function '{spec.function}' is not defined in verifiers.py"
                    f"{hint(spec.function, functions)}",
                )
            elif problem := _signature_problem("verifier function", function, spec.function, spec.args):
                folder.problem(where, problem)
            verifiers.append(Verifier(spec, function))
        else:
            verifiers.append(Verifier(spec))
    return tuple(verifiers)


def _items_source(folder: BundleFolder, where: str, check: ItemsCheck, env: AnyEnvDefinition) -> None:
    """An items verifier reads `items()`, or a tool of the env's with arguments it takes."""
    if check.tool is None:
        if isinstance(env, McpEnvDefinition):
            folder.problem(
                where,
                f"env '{env.name}' is an MCP server: name the tool that returns its items "
                '("tool": ..., "arguments": {...})',
            )
        elif not env.has_items:
            folder.problem(where, f"env '{env.name}' does not define items(), which the items verifier reads")
        return
    if isinstance(env, McpEnvDefinition):
        return  # its tools are its server's to list: the verifier checks the name when it runs
    tool = env.tool(check.tool)
    if tool is None:
        folder.problem(
            where,
            f"env '{env.name}' has no tool '{check.tool}'" + hint(check.tool, [t.name for t in env.tools]),
        )
        return
    try:
        tool.validate(check.arguments)
    except EpisodeError as exc:
        folder.problem(where, f"the items verifier's arguments: {exc.message}")


def checked_user(
    folder: BundleFolder, place: str, entry: TaskEntry, users: Mapping[str, Callable[..., Any]]
) -> User | None:
    """The task's simulated user, checked: its function and arguments, or its model's client."""
    spec = entry.user
    if spec is None:
        return None
    where = f"{place}: user"
    if spec.max_turns < len(entry.turns):
        folder.problem(
            where,
            f"max_turns is {spec.max_turns}, but the task fixes {turns(len(entry.turns))}: raise max_turns",
        )
    if isinstance(spec, UserModel):
        if not installed("openai"):
            folder.problem(
                where,
                f"a chat model's user needs the users extra, not installed here: {install_line('users')}",
            )
        return simulated_user(spec)
    assert isinstance(spec, UserFunction)
    function = users.get(spec.function)
    if function is None:
        folder.problem(
            where,
            f"user function '{spec.function}' is not defined in users.py{hint(spec.function, users)}",
        )
        return None
    if problem := _signature_problem("user function", function, spec.function, spec.args):
        folder.problem(where, problem)
    return simulated_user(spec, function)


def _signature_problem(
    kind: str, function: Callable[..., Any], name: str, args: Mapping[str, Any]
) -> str | None:
    """Why a bundle's function (`kind`: a user function, a verifier function) cannot be called as
    `NAME(context, **args)` with its task's args, saying the signature it needs; None when it can (or
    has no signature to read: its call will say)."""
    try:
        signature = inspect.signature(function)
    except ValueError:
        return None
    needed = (
        f"it is called as {name}(context, **args), so write `def {name}({', '.join(['context', *args])})`"
    )
    parameters = list(signature.parameters.values())
    first = parameters[0] if parameters else None
    positional = (Parameter.POSITIONAL_ONLY, Parameter.POSITIONAL_OR_KEYWORD, Parameter.VAR_POSITIONAL)
    if first is None or first.kind not in positional:
        return f"{kind} '{name}' has no first parameter for the context: {needed}"
    if first.name in args:
        return f"{kind} '{name}' takes the task's arg '{first.name}' first, where the context goes: {needed}"
    try:
        signature.bind(None, **args)
    except TypeError as exc:
        return f"{kind} '{name}' cannot take the task's args {args}: {exc}; {needed}"
    return None
