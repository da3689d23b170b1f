"""The classes TRL instantiates: one per toolset, generated from the tools the server lists.

A class's public functions are exactly its toolset's tools plus `end_turn`; `reset` and `get_reward`
are its only other public names (TRL offers every other public function to the model as a tool).
AsyncGRPO pickles the factory into a spawned process, and generated classes cannot be found by
name there; so they have their own metaclass, registered with `copyreg`: a class pickles as its
`ToolsetSettings` (the listed tools, the server, the deadlines, and the key of the `AgentEnv` it came
from) and is rebuilt from them without asking the server again. Any other class of that metaclass
(a user's subclass) pickles by name, as classes do, and fails to if it cannot be found by name.
"""

from __future__ import annotations

import copyreg
import importlib.util
import json
import threading
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_env._errors import ArgumentTypeError, StateError
from agent_env._private.threading_exit import at_exit
from agent_env.client._deadlines import DEFAULT_CONNECT_TIMEOUT_S, Deadlines
from agent_env.client._session import SessionClient, close_sessions
from agent_env.client._signatures import ToolSignature, UnsupportedToolError, tool_signature
from agent_env.client._tools import ToolMethods, tool_method
from agent_env.training.trl._fleet import FleetSettings, fleet_of
from agent_env.training.trl._groups import handed
from agent_env.training.trl._rollout import Rollouts


@dataclass(frozen=True)
class ToolsetSettings:
    """Everything a toolset's class needs; plain data, so it pickles into a spawned process."""

    key: str
    """The `AgentEnv` the class came from: `AgentEnv.close()` closes the instances of its key only."""
    fleet: FleetSettings
    """The servers (and their tokens, kept out of reprs, so out of logs)."""
    toolset: str
    tools: tuple[str, ...]
    """Each tool's JSON Schema, as JSON text."""
    deadlines: Deadlines
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    label: str | None = None
    """Sent with each reset: the server's recorded trajectories carry it (`AgentEnv(label=...)`)."""

    def signatures(self) -> list[ToolSignature]:
        signatures = []
        for text in self.tools:
            try:
                signatures.append(tool_signature(json.loads(text)))
            except UnsupportedToolError as exc:
                raise UnsupportedToolError(f"toolset '{self.toolset}': {exc}") from None
        return signatures


class _EnvironmentClass(type):
    """The metaclass of every toolset class; `copyreg` reduces its classes (see the module's docstring)."""


class ToolsetEnvironment(ToolMethods, metaclass=_EnvironmentClass):
    """One rollout's environment at a time on one server session; TRL reuses instances across rollouts."""

    _settings: ClassVar[ToolsetSettings]

    def __init__(self) -> None:
        settings: ToolsetSettings | None = getattr(type(self), "_settings", None)
        if settings is None:
            raise ArgumentTypeError("ToolsetEnvironment is a base: use the classes of AgentEnv(...).factory")
        fleet = fleet_of(settings.key, settings.fleet, connect_timeout_s=settings.connect_timeout_s)
        self._rollouts = Rollouts(fleet, settings.deadlines, label=settings.label)
        _track(settings.key, self)

    def reset(self, **row: Any) -> str | None:
        """Start the row's task (its `split` and `index`, or, for an online curriculum's row, the task
        drawn for its group, whose first message it returns); returns while the task deploys."""
        return self._rollouts.reset(row)

    def _end_turn(self, reply: str) -> str:
        return self._rollouts.end_turn(reply)

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        return self._rollouts.call_tool(name, arguments)

    def get_reward(self) -> float | None:
        """The episode's score from the task's verifiers; None when it could not be scored."""
        reward = self._score()
        handed(reward)
        return reward

    def _score(self, group: tuple[str, int] | None = None) -> float | None:
        """End the episode's open turns (naming its GRPO group, if known) and wait for its score:
        `score_batch` runs these side by side."""
        return self._rollouts.reward(group)

    def _grouping(self) -> tuple[str, str, int] | None:
        """The server, split and index of an episode waiting to be judged beside its GRPO group."""
        return self._rollouts.grouping()

    def _detach(self) -> SessionClient | None:
        return self._rollouts.detach()


_CLASSES: weakref.WeakValueDictionary[tuple[str, str], _EnvironmentClass] = weakref.WeakValueDictionary()
_CLASSES_LOCK = threading.Lock()


def environment_class(settings: ToolsetSettings) -> _EnvironmentClass:
    """The class of a toolset; the same class again for the same settings in one process."""
    with _CLASSES_LOCK:
        known = _CLASSES.get((settings.key, settings.toolset))
        if known is not None and known.__dict__["_settings"] == settings:
            return known
        namespace: dict[str, Any] = {
            "__module__": __name__,
            "__qualname__": settings.toolset,
            "__doc__": f"The tools of toolset '{settings.toolset}', plus end_turn.",
            "_settings": settings,
            "_generated": True,
        }
        for signature in settings.signatures():
            namespace[signature.name] = tool_method(signature, settings.toolset, __name__)
        made = _EnvironmentClass(settings.toolset, (ToolsetEnvironment,), namespace)
        _CLASSES[(settings.key, settings.toolset)] = made
        return made


def check_rendering(cls: _EnvironmentClass) -> None:
    """Render each tool as TRL will (transformers' get_json_schema), when transformers is installed.

    TRL renders tools only at its first generation, deep in `train()`; a tool it cannot render is
    refused here instead, when the factory is built, naming the tool.
    """
    if importlib.util.find_spec("transformers") is None:
        return
    from transformers.utils.chat_template_utils import get_json_schema

    settings: ToolsetSettings = cls.__dict__["_settings"]
    for tool in settings.tools:
        listed = json.loads(tool).get("function", {})
        name = listed.get("name")
        try:
            rendered = get_json_schema(getattr(cls, name))["function"]
        except Exception as exc:
            raise UnsupportedToolError(
                f"toolset '{settings.toolset}', tool '{name}': transformers' get_json_schema, which TRL "
                f"shows tools with, cannot render it: {exc}"
            ) from None
        parameters = listed.get("parameters") or {}
        expected = (
            name,
            (listed.get("description") or "").strip(),
            list(parameters.get("properties") or {}),
            sorted(parameters.get("required") or []),
        )
        got = (
            rendered["name"],
            rendered["description"],
            list(rendered["parameters"]["properties"]),
            sorted(rendered["parameters"].get("required", [])),
        )
        if expected != got:
            raise UnsupportedToolError(
                f"toolset '{settings.toolset}', tool '{name}': get_json_schema renders it as {rendered!r}, "
                f"which is not the tool the server lists ({listed!r}): simplify its description or arguments"
            )


def _reduce_class(cls: _EnvironmentClass) -> str | tuple[Any, ...]:
    if cls.__dict__.get("_generated"):
        return (environment_class, (cls.__dict__["_settings"],))
    return cls.__qualname__


copyreg.pickle(_EnvironmentClass, _reduce_class)


_LIVE: dict[str, weakref.WeakSet[ToolsetEnvironment]] = {}
_CLOSED: set[str] = set()
_LIVE_LOCK = threading.Lock()


def _track(key: str, instance: ToolsetEnvironment) -> None:
    with _LIVE_LOCK:
        if key in _CLOSED:
            raise StateError("the AgentEnv this environment class came from is closed: make a new AgentEnv")
        _LIVE.setdefault(key, weakref.WeakSet()).add(instance)


def close_instances(key: str | None = None) -> None:
    """Close every instance of one `AgentEnv`'s classes (or of all): their episodes end on the server."""
    with _LIVE_LOCK:
        keys = [key] if key is not None else list(_LIVE)
        _CLOSED.update(keys)
        instances = [instance for k in keys for instance in list(_LIVE.pop(k, ()))]
    close_sessions([s for s in (instance._detach() for instance in instances) if s is not None])


at_exit(close_instances)
