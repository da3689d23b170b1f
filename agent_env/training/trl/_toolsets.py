"""A split's toolsets as the factory and the demonstrations show them: each toolset's first task, and
its tools with the deadlines they declare, from the Task API's spec or, for a toolset whose tools are
known only once deployed (an MCP env's: its spec's `tools` is null), as the server lists them when
one of its tasks is played (the probe)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_env._specs import TaskSpec
from agent_env.client._tools import offered_tools
from agent_env.client._wire import MAX_LABEL_LENGTH
from agent_env.training.trl._errors import ServerUnavailableError, UnknownSplitError
from agent_env.training.trl._fleet import Fleet

PROBE_LABEL = "agent_env: the factory's probe, listing the tools of toolset {toolset}"
"""The label of the episode a factory plays only to list a toolset's tools (an MCP env's, known only
once deployed): a server that records trajectories writes it into that episode's, so the probe, left
unfinished by design, reads as what it is."""


def probe_label(toolset: str) -> str:
    return PROBE_LABEL.format(toolset=toolset)[:MAX_LABEL_LENGTH]


@dataclass(frozen=True)
class Listing:
    """A toolset's tools as the server lists them, and the deadlines they declare (an older server
    lists none)."""

    tools: Sequence[Mapping[str, Any]]
    tool_timeouts: Mapping[str, float]


def first_tasks(tasks: Sequence[TaskSpec], split: str, url: str) -> dict[str, TaskSpec]:
    """Each toolset of the split's `tasks`, with the first task that uses it."""
    if not tasks:
        raise UnknownSplitError(f"split '{split}' on {url} has no tasks: pass another split=")
    firsts: dict[str, TaskSpec] = {}
    for task in tasks:
        firsts.setdefault(task.toolset.name, task)
    return firsts


def listing(task: TaskSpec, fleet: Fleet, *, reset_timeout_s: float) -> Listing:
    """The tools of the task's toolset and the deadlines they declare: from its spec, or, for a
    toolset whose tools are known only once deployed, as the server lists them when the task is
    played on one of `fleet`'s sessions."""
    if task.toolset.tools is not None:
        return Listing(task.toolset.tools, task.toolset.tool_timeouts)
    session = fleet.open_session()
    try:
        label = probe_label(task.toolset.name)
        answer = session.reset(task.split, task.index, timeout_s=reset_timeout_s, label=label).result()
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
    return Listing(answer.tools, answer.tool_timeouts or {})


def offered(
    tasks: Iterable[TaskSpec], listed: Callable[[TaskSpec], Listing]
) -> dict[str, list[dict[str, Any]]]:
    """The tools of each of the tasks' toolsets (each listed once, by `listed`), as GRPOTrainer shows
    them to the model."""
    tools: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        if task.toolset.name not in tools:
            tools[task.toolset.name] = offered_tools(listed(task).tools)
    return tools
