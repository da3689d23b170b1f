"""Measuring a model on a bundle's tasks: `evaluate(target, policy)` and `agent-env eval`.

Behind the `eval` extra (`pip install 'agentenv-framework[eval]'`). A policy turns the conversation
and the tools into an assistant message; `OpenAIPolicy` is one for any OpenAI-compatible
chat-completions endpoint, `TransformersPolicy` a local Hugging Face model (torch and trl, the
trainer's, imported only when one is made). Samples play over the same session client the trainer uses.
"""

from __future__ import annotations

from agent_env.eval._require import require_eval_extra as _require_eval_extra

_require_eval_extra()

from agent_env.eval.hf_policy import LocalModelError, TransformersPolicy  # noqa: E402
from agent_env.eval.openai_policy import EndpointError, OpenAIPolicy  # noqa: E402
from agent_env.eval.passk import pass_at_k  # noqa: E402
from agent_env.eval.play import PlaySettings, play_sample  # noqa: E402
from agent_env.eval.policy import (  # noqa: E402
    END_TURN,
    AssistantMessage,
    Message,
    Policy,
    PolicyError,
    ToolCall,
    end_turn_tool,
)
from agent_env.eval.results import EvalResult, TaskResult  # noqa: E402
from agent_env.eval.run import RESULTS_FILE, Progress, evaluate  # noqa: E402

__all__ = [
    "END_TURN",
    "RESULTS_FILE",
    "AssistantMessage",
    "EndpointError",
    "EvalResult",
    "LocalModelError",
    "Message",
    "OpenAIPolicy",
    "PlaySettings",
    "Policy",
    "PolicyError",
    "Progress",
    "TaskResult",
    "ToolCall",
    "TransformersPolicy",
    "end_turn_tool",
    "evaluate",
    "pass_at_k",
    "play_sample",
]
