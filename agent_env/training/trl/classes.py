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
import inspect
import json
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import docstring_parser

from agent_env._private.threading_exit import at_exit
from agent_env.training.trl.fleet import FleetSettings, fleet_of
from agent_env.training.trl.groups import handed
from agent_env.training.trl.rollout import Deadlines, Rollouts
from agent_env.training.trl.session import SessionClient, close_sessions
from agent_env.training.trl.signatures import (
    ToolSignature,
    UnsupportedToolError,
    bind_arguments,
    tool_signature,
)

END_TURN = "end_turn"


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
    connect_timeout_s: float = 10.0
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


class ToolsetEnvironment(metaclass=_EnvironmentClass):
    """One rollout's environment at a time on one server session; TRL reuses instances across rollouts."""

    _settings: ClassVar[ToolsetSettings]

    def __init__(self) -> None:
        settings: ToolsetSettings | None = getattr(type(self), "_settings", None)
        if settings is None:
            raise TypeError("ToolsetEnvironment is a base: use the classes of AgentEnv(...).factory")
        fleet = fleet_of(settings.key, settings.fleet, connect_timeout_s=settings.connect_timeout_s)
        self._rollouts = Rollouts(fleet, settings.deadlines, label=settings.label)
        _track(settings.key, self)

    def reset(self, **row: Any) -> None:
        """Start the row's task (its `split` and `index`); returns at once, while the task deploys."""
        self._rollouts.reset(row)

    def end_turn(self, reply: str = ""):  # type: ignore[no-untyped-def]  # noqa: ANN201
        """End your turn with your reply to the user. Call it once you have done what they asked.

        Args:
            reply: Your reply to the user.
        """
        # No return hint: get_json_schema would show it to the model as part of the tool.
        answer: str = self._rollouts.end_turn(reply)
        return answer

    def get_reward(self) -> float | None:
        """The episode's score from the task's verifiers; None when it could not be scored."""
        reward = self._rollouts.reward()
        handed(reward)
        return reward

    def _detach(self) -> SessionClient | None:
        return self._rollouts.detach()


def end_turn_tool() -> dict[str, Any]:
    """`end_turn`'s schema, read from `ToolsetEnvironment.end_turn`: eval and the demonstrations show
    the model the tool training does. (`Tool.from_function` refuses the name: it is reserved for this
    one use.)"""
    doc = docstring_parser.parse(
        inspect.getdoc(ToolsetEnvironment.end_turn) or "", style=docstring_parser.DocstringStyle.GOOGLE
    )
    described = {param.arg_name: param.description or "" for param in doc.params}
    description = "\n\n".join(part for part in (doc.short_description, doc.long_description) if part)
    return {
        "type": "function",
        "function": {
            "name": END_TURN,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"reply": {"type": "string", "description": described.get("reply", "")}},
            },
        },
    }


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
            namespace[signature.name] = _tool_method(signature, settings.toolset)
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


_NOT_OFFERED = frozenset({"reset", "get_reward"})
"""The public functions of an environment class TRL does not offer the model as tools."""


def offered_tools(schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tools GRPOTrainer shows the model for a toolset whose tools are `schemas` (the Task API's),
    exactly as it shows them: its class's public functions but `_NOT_OFFERED`, by name (TRL lists them
    with `inspect.getmembers`), each through transformers' `get_json_schema`, `end_turn` included.

    What a model learns from (demonstrations) or is measured on (a local model's eval) must render as
    training renders, and that is not the Task API's schema: `get_json_schema` reads a signature, so
    bounds and defaults are gone. Needs transformers (TRL's).
    """
    from transformers.utils.chat_template_utils import get_json_schema

    settings = ToolsetSettings(
        key="offered-tools",
        fleet=FleetSettings(("",)),
        toolset="offered",
        tools=tuple(json.dumps(schema) for schema in schemas),
        deadlines=Deadlines(1.0, 1.0),
    )
    made = environment_class(settings)
    return [
        get_json_schema(function)
        for name, function in inspect.getmembers(made, predicate=inspect.isfunction)
        if name not in _NOT_OFFERED and not name.startswith("_")
    ]


def _tool_method(signature: ToolSignature, toolset: str) -> Callable[..., str]:
    bind = bind_arguments(signature)
    name = signature.name

    def call(self: ToolsetEnvironment, /, **arguments: Any) -> str:
        return self._rollouts.call_tool(name, bind(self, **arguments))

    call.__name__ = name
    call.__qualname__ = f"{toolset}.{name}"
    call.__module__ = __name__
    call.__doc__ = signature.doc
    call.__signature__ = signature.signature  # type: ignore[attr-defined]
    call.__annotations__ = signature.annotations
    return call


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
            raise RuntimeError("the AgentEnv this environment class came from is closed: make a new AgentEnv")
        _LIVE.setdefault(key, weakref.WeakSet()).add(instance)


def close_instances(key: str | None = None) -> None:
    """Close every instance of one `AgentEnv`'s classes (or of all): their episodes end on the server."""
    with _LIVE_LOCK:
        keys = [key] if key is not None else list(_LIVE)
        _CLOSED.update(keys)
        instances = [instance for k in keys for instance in list(_LIVE.pop(k, ()))]
    close_sessions([s for s in (instance._detach() for instance in instances) if s is not None])


at_exit(close_instances)
