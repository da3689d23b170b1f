"""The tools a model is shown for a toolset: its server's tools, each a typed function, and `end_turn`.

TRL offers a model the public functions of an environment class, each rendered by transformers'
`get_json_schema`. The trainer's classes (`agent_env.training.trl._classes`) are made of `ToolMethods`
and `tool_method`, and so is what `offered_tools` renders: eval and the demonstrations show a model
exactly the tools training shows it, `end_turn`'s description included.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import docstring_parser

from agent_env.client._signatures import ToolSignature, bind_arguments, tool_signature

END_TURN = "end_turn"

TASK_OVER = "The task is over: your reply ended its last turn."
"""What `end_turn` answers when the turn it ends was the task's last."""

NOT_OFFERED = frozenset({"reset", "get_reward"})
"""The public functions of an environment class TRL does not offer the model as tools."""


class ToolMethods:
    """A toolset's tools as methods, plus `end_turn`: what a model is offered. A subclass plays them."""

    def end_turn(self, reply: str = ""):  # type: ignore[no-untyped-def]  # noqa: ANN202
        """End your turn with your reply to the user. Call it once you have done what they asked.

        Args:
            reply: Your reply to the user.
        """
        # No return hint: get_json_schema would show it to the model as part of the tool.
        answer: str = self._end_turn(reply)
        return answer

    end_turn.__qualname__ = END_TURN  # Python names a call's TypeError by it: the model sees the tool's name

    def _end_turn(self, reply: str) -> str:
        raise NotImplementedError("a toolset's class plays its episodes")

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        raise NotImplementedError("a toolset's class plays its episodes")


def tool_method(signature: ToolSignature, toolset: str, module: str) -> Callable[..., str]:
    """The method for one tool, whose hints and docstring render to the tool the server lists."""
    bind = bind_arguments(signature)
    name = signature.name

    def call(self: ToolMethods, /, **arguments: Any) -> str:
        return self._call_tool(name, bind(self, **arguments))

    call.__name__ = name
    call.__qualname__ = f"{toolset}.{name}"
    call.__module__ = module
    call.__doc__ = signature.doc
    call.__signature__ = signature.signature  # type: ignore[attr-defined]
    call.__annotations__ = signature.annotations
    return call


def end_turn_tool() -> dict[str, Any]:
    """`end_turn`'s schema, read from `ToolMethods.end_turn`: eval and the demonstrations show the model
    the tool training does. (`Tool.from_function` refuses the name: it is reserved for this one use.)"""
    doc = docstring_parser.parse(
        inspect.getdoc(ToolMethods.end_turn) or "", style=docstring_parser.DocstringStyle.GOOGLE
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


def offered_tools(schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tools GRPOTrainer shows the model for a toolset whose tools are `schemas` (the Task API's),
    exactly as it shows them: its class's public functions but `NOT_OFFERED`, by name (TRL lists them
    with `inspect.getmembers`), each through transformers' `get_json_schema`, `end_turn` included.

    What a model learns from (demonstrations) or is measured on (a local model's eval) must render as
    training renders, and that is not the Task API's schema: `get_json_schema` reads a signature, so
    bounds and defaults are gone. Needs transformers (TRL's). Raises `UnsupportedToolError` for a tool
    no signature can say.
    """
    from transformers.utils.chat_template_utils import get_json_schema

    signatures = [tool_signature(schema) for schema in schemas]
    namespace = {signature.name: tool_method(signature, "offered", __name__) for signature in signatures}
    made = type("offered", (ToolMethods,), namespace)
    return [
        get_json_schema(function)
        for name, function in inspect.getmembers(made, predicate=inspect.isfunction)
        if name not in NOT_OFFERED and not name.startswith("_")
    ]
