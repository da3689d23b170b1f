"""`agent-env eval --policy`: a policy of Python, or the reference plays, instead of a model.

`--policy MODULE:NAME` imports MODULE as `python -m` would find it (the current directory first), and
plays NAME: a `Policy` (called as `policy(messages, tools)`, answering an `AssistantMessage`), or a
`TaskPolicies` (`for_task(task)`, a policy per sample). `--policy reference` plays each task's
reference play. Each input that cannot be played is one `ArgumentError` saying what to give.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from contextlib import closing
from typing import TYPE_CHECKING, Any

from agent_env._bundle.reader import Bundle
from agent_env._errors import ArgumentError

if TYPE_CHECKING:
    from agent_env._specs import Solution, TaskSpec
    from agent_env.eval import AssistantMessage, Policy, ReferencePolicy, TaskPolicies

REFERENCE = "reference"
SPEC = "MODULE:NAME"
_CONTRACT = (
    "a policy, called as policy(messages, tools) and answering an agent_env.eval.AssistantMessage, "
    "or an object whose for_task(task) makes one per sample"
)


def python_policy(spec: str) -> Policy | TaskPolicies:
    """The policy `spec` (MODULE:NAME) names, checked to be one before any episode."""
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        raise ArgumentError(
            f"--policy '{spec}' is neither '{REFERENCE}' nor {SPEC}: name a module and a policy in it, "
            "e.g. --policy my_policy:act for act in my_policy.py"
        )
    found = getattr(_module(module_name), name, _MISSING)
    if found is _MISSING:
        raise ArgumentError(
            f"--policy {spec}: module '{module_name}' has no '{name}': define it there, {_CONTRACT}"
        )
    return _checked(found, spec)


def reference_policy(target: Bundle | str, split: str, token: str | None) -> ReferencePolicy:
    """The reference plays of `split`, from the bundle or the server's Task API; a split without
    any is refused before any episode."""
    from agent_env.eval import ReferencePolicy

    solutions: dict[str, Solution]
    if isinstance(target, Bundle):
        solutions = dict(target.solutions.get(split, {}))
        where = str(target.path)
    else:
        from agent_env.client._taskapi import TaskAPI

        with closing(TaskAPI(target, token=token)) as api:
            solutions = {solution.script.id: solution.script for solution in api.solutions(split)}
        where = target
    if not solutions:
        raise ArgumentError(
            f"--policy {REFERENCE}: split '{split}' of {where} has no reference plays: add "
            f"solutions/{split}.jsonl to the bundle (a Harbor task: solution/solve.sh), or name "
            "another split with --split"
        )
    return ReferencePolicy(solutions)


_MISSING = object()


def _module(name: str) -> Any:
    """The module `name`, found as `python -m` finds one: the current directory first."""
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise ArgumentError(
                f"--policy: no module '{name}' in {here} nor among the installed packages: check its "
                f"name, or run eval from the folder that holds {name.replace('.', '/')}.py"
            ) from None
        raise ArgumentError(f"--policy: importing module '{name}' failed: {exc}") from None
    except Exception as exc:  # the module's own code failed: its error, named
        raise ArgumentError(
            f"--policy: importing module '{name}' raised {type(exc).__name__}: {exc}"
        ) from None


def _checked(found: Any, spec: str) -> Policy | TaskPolicies:
    """`found` as a policy whose answers are checked, or an `ArgumentError` saying what it must be."""
    from agent_env.eval import TaskPolicies

    if isinstance(found, TaskPolicies) and not inspect.isclass(found):
        return _CheckedTasks(found, spec)
    if callable(found) and _takes_messages_and_tools(found):
        return _Checked(found, spec)
    if inspect.isclass(found):
        raise ArgumentError(
            f"--policy {spec} is a class, not a policy: it must be {_CONTRACT}: make one in the module "
            f"(e.g. {found.__name__.lower()} = {found.__name__}()) and name it"
        )
    raise ArgumentError(f"--policy {spec} is a {type(found).__name__}, not a policy: it must be {_CONTRACT}")


def _takes_messages_and_tools(found: Any) -> bool:
    try:
        inspect.signature(found).bind([], [])
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): let the first answer tell
        return True
    return True


class _Checked:
    """A policy of the user's whose every answer is checked: one that is no `AssistantMessage` is
    its sample's error, saying so, not an `AttributeError` deep in the player."""

    def __init__(self, policy: Policy, spec: str) -> None:
        self.policy, self.spec = policy, spec

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AssistantMessage:
        from agent_env.eval import AssistantMessage, PolicyError

        answer = self.policy(messages, tools)
        if not isinstance(answer, AssistantMessage):
            raise PolicyError(
                f"--policy {self.spec} answered a {type(answer).__name__}, not an AssistantMessage: "
                "answer AssistantMessage(content=TEXT, tool_calls=(ToolCall.parsed(ID, NAME, ARGUMENTS),))"
            )
        return answer


class _CheckedTasks:
    """A user's `TaskPolicies`, each policy it makes checked as `_Checked` checks one."""

    def __init__(self, policies: TaskPolicies, spec: str) -> None:
        self.policies, self.spec = policies, spec

    def for_task(self, task: TaskSpec) -> Policy | None:
        made = self.policies.for_task(task)
        return None if made is None else _Checked(made, self.spec)
