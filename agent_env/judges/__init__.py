"""Judged rewards: a `judge` verifier asks a chat model to score an episode against a rubric.

A task's `{"type": "judge", ...}` verifier (`agent_env._verifiers.JudgeCheck`), alone or naming a judge
the bundle shares (`[judges.NAME]` in bundle.toml, `JudgeConfig`), is resolved at load into a `Judge`;
`Judging` asks it (the cache, each endpoint's bound, the observers), through any OpenAI-compatible
endpoint with the `openai` client (the `judge` extra), imported only when a judgement is asked. A
relative judge reads a GRPO group's episodes together (`agent_env.judges._groups`). The guide is
docs/guides/judges.md.
"""

from __future__ import annotations

import typing as _typing

from agent_env._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from agent_env._contracts.judges import (
        GroupInvite as GroupInvite,
        Judge as Judge,
        JudgeConfig as JudgeConfig,
        JudgeScale as JudgeScale,
    )
    from agent_env.judges._groups import (
        GroupSeat as GroupSeat,
        JudgeGroups as JudgeGroups,
    )
    from agent_env.judges._judging import (
        JudgeCall as JudgeCall,
        JudgeError as JudgeError,
        JudgeObserver as JudgeObserver,
        Judging as Judging,
    )
    from agent_env.judges._verdict import Verdict as Verdict
else:
    _lazy_exports(
        __name__,
        {
            "agent_env.judges._groups": ["GroupSeat", "JudgeGroups"],
            "agent_env.judges._judging": ["JudgeCall", "JudgeError", "JudgeObserver", "Judging"],
            "agent_env._contracts.judges": ["GroupInvite", "Judge", "JudgeConfig", "JudgeScale"],
            "agent_env.judges._verdict": ["Verdict"],
        },
    )
