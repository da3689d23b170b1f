"""Measuring a model on a bundle's tasks: `evaluate(target, policy)` and `agent-env eval`.

Behind the `eval` extra (`pip install 'agentenv-framework[eval]'`). A policy turns the conversation
and the tools into an assistant message; `OpenAIPolicy` is one for any OpenAI-compatible
chat-completions endpoint, `TransformersPolicy` a local Hugging Face model (torch and trl, the
trainer's, imported only when one is made), `ScriptedPolicy` a task's reference play
(`ReferencePolicy` each task's). Samples play over the same session client the trainer uses.

Importing this package checks only the part of the extra every policy needs (the `trl` extra's
client); each name loads with its module when first used (`agent_env._lazy`), so the player and the
scripted policy, which the trainer's demonstrations use, need no openai: `OpenAIPolicy` (and
`EndpointError`) fail to import without it, naming the extra.
"""

from __future__ import annotations

import typing as _typing

from agent_env._lazy import lazy_exports as _lazy_exports
from agent_env.eval._require import require_player as _require_player

_require_player()

if _typing.TYPE_CHECKING:
    from agent_env.client._tools import END_TURN as END_TURN, end_turn_tool as end_turn_tool
    from agent_env.eval._hf_policy import (
        LocalModelError as LocalModelError,
        TransformersPolicy as TransformersPolicy,
    )
    from agent_env.eval._openai_policy import EndpointError as EndpointError, OpenAIPolicy as OpenAIPolicy
    from agent_env.eval._passk import pass_at_k as pass_at_k
    from agent_env.eval._play import PlaySettings as PlaySettings, play_sample as play_sample
    from agent_env.eval._policy import (
        AssistantMessage as AssistantMessage,
        Message as Message,
        Policy as Policy,
        PolicyError as PolicyError,
        TaskPolicies as TaskPolicies,
        ToolCall as ToolCall,
    )
    from agent_env.eval._results import EvalResult as EvalResult, TaskResult as TaskResult
    from agent_env.eval._run import RESULTS_FILE as RESULTS_FILE, Progress as Progress, evaluate as evaluate
    from agent_env.eval._scripted import ReferencePolicy as ReferencePolicy, ScriptedPolicy as ScriptedPolicy
else:
    _lazy_exports(
        __name__,
        {
            "agent_env.client._tools": ["END_TURN", "end_turn_tool"],
            "agent_env.eval._hf_policy": ["LocalModelError", "TransformersPolicy"],
            "agent_env.eval._openai_policy": ["EndpointError", "OpenAIPolicy"],
            "agent_env.eval._passk": ["pass_at_k"],
            "agent_env.eval._play": ["PlaySettings", "play_sample"],
            "agent_env.eval._policy": [
                "AssistantMessage",
                "Message",
                "Policy",
                "PolicyError",
                "TaskPolicies",
                "ToolCall",
            ],
            "agent_env.eval._results": ["EvalResult", "TaskResult"],
            "agent_env.eval._run": ["RESULTS_FILE", "Progress", "evaluate"],
            "agent_env.eval._scripted": ["ReferencePolicy", "ScriptedPolicy"],
        },
    )
