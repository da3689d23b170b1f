"""TRL's side of a served bundle: `AgentEnv(url).dataset` and `.factory` for GRPOTrainer and AsyncGRPO,
and `.demonstrations()` (or `.demonstrations_from(trajectories)`, recorded successes) for SFTTrainer;
`tasks_with_signal` (and `dataset_for(..., score_std=...)`) for the tasks an evaluation found worth
training on; `GroupsWithSignal`, a TrainerCallback that logs the share of GRPO's groups whose rewards
differ (`share_with_signal` computes it for any rewards); `score_batch`, a reward function with which
GRPOTrainer scores a batch's episodes at once.

Behind the `trl` extra (`pip install 'agentenv-framework[trl]'`); TRL itself is the trainer's to pin
and is never imported here. Importing this package imports OpenEnv's client (a second or two: without
its web interface, `agent_env._private.openenv_core`).
"""

from __future__ import annotations

from agent_env.training.trl._require import require_trl_extra as _require_trl_extra

_require_trl_extra()

from agent_env.openenv._require import require_openenv as _require_openenv  # noqa: E402

try:
    _require_openenv()
except ImportError as missing:
    raise ImportError(f"{missing}; agent_env.training.trl: pip install 'agentenv-framework[trl]'") from None

from agent_env.client._deadlines import DEFAULT_RESET_TIMEOUT_S, DEFAULT_TOOL_TIMEOUT_S  # noqa: E402
from agent_env.client._session import GRACE_S  # noqa: E402
from agent_env.client._tools import TASK_OVER  # noqa: E402
from agent_env.training.trl._agentenv import AgentEnv  # noqa: E402
from agent_env.training.trl._batch import score_batch  # noqa: E402
from agent_env.training.trl._classes import ToolsetEnvironment, ToolsetSettings  # noqa: E402
from agent_env.training.trl._curriculum import OnlineCurriculum  # noqa: E402
from agent_env.training.trl._errors import (  # noqa: E402
    CurriculumError,
    DemonstrationError,
    DemonstrationWarning,
    EvalResultsError,
    FleetMismatchError,
    GroupAcrossServersWarning,
    ServerAtCapacityError,
    ServerUnavailableError,
    ToolCallError,
    UnknownSplitError,
    UnsupportedToolError,
)
from agent_env.training.trl._factory import Factory  # noqa: E402
from agent_env.training.trl._fleet import FleetSettings  # noqa: E402
from agent_env.training.trl._groups import GroupsWithSignal, share_with_signal  # noqa: E402
from agent_env.training.trl._selection import Unmeasured, tasks_with_signal  # noqa: E402
from agent_env.training.trl._tiny import rendered, tiny_model, tiny_model_for, tiny_tokenizer  # noqa: E402

__all__ = [
    "DEFAULT_RESET_TIMEOUT_S",
    "DEFAULT_TOOL_TIMEOUT_S",
    "GRACE_S",
    "TASK_OVER",
    "AgentEnv",
    "CurriculumError",
    "DemonstrationError",
    "DemonstrationWarning",
    "EvalResultsError",
    "Factory",
    "FleetMismatchError",
    "FleetSettings",
    "GroupAcrossServersWarning",
    "GroupsWithSignal",
    "OnlineCurriculum",
    "ServerAtCapacityError",
    "ServerUnavailableError",
    "ToolCallError",
    "ToolsetEnvironment",
    "ToolsetSettings",
    "UnknownSplitError",
    "Unmeasured",
    "UnsupportedToolError",
    "rendered",
    "score_batch",
    "share_with_signal",
    "tasks_with_signal",
    "tiny_model",
    "tiny_model_for",
    "tiny_tokenizer",
]
