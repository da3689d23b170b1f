"""A demonstration is, message for message, the conversation GRPOTrainer's tool loop builds for the
same play: a step per assistant message, each seeing the results of the one before.

The bundle is a small helpdesk written here: look a user up by email, then unlock the account by the
username the lookup answered, and note the ticket in the same answer (two calls made together); a
second turn checks the account. The model is the demo's tiny one, built offline; its `generate` is
stood in for by one that plays the bundle's reference solution, a step per generation, as a model
that reads each result before its next answer. The conversation TRL built is what it hands its
reward functions (each prompt followed by its completion messages).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

from trl import GRPOTrainer  # noqa: E402

from agent_env import Solution, load_bundle, load_solutions  # noqa: E402
from agent_env.training.trl import AgentEnv  # noqa: E402
from examples.train_grpo import grpo_config, tiny_model_and_tokenizer  # noqa: E402
from tst.support.bundles import make_bundle  # noqa: E402
from tst.trl._generated import ScriptedGenerate  # noqa: E402

HELPDESK = '''
import json

from agent_env import Env, tool


class Helpdesk(Env):
    """User accounts, some locked, and the desk's ticket notes."""

    def setup(self, seed):
        self.users = dict(seed["users"])
        self.locked = set(seed["locked"])
        self.notes = []

    def items(self):
        return sorted(self.locked)

    @tool
    def find_user(self, email: str) -> str:
        """Find a user's account by email.

        Args:
            email: The user's email address.
        """
        return json.dumps({"username": self.users[email], "locked": self.users[email] in self.locked})

    @tool
    def unlock_account(self, username: str) -> str:
        """Unlock a user's account.

        Args:
            username: The account's username.
        """
        if username not in self.locked:
            raise ValueError(f"account {username} is not locked")
        self.locked.discard(username)
        return f"unlocked {username}"

    @tool
    def add_note(self, text: str) -> str:
        """Note something on the ticket.

        Args:
            text: The note.
        """
        self.notes.append(text)
        return f"note {len(self.notes)} added"

    @tool
    def account_status(self, username: str) -> str:
        """Whether an account is locked.

        Args:
            username: The account's username.
        """
        return "locked" if username in self.locked else "active"
'''

TOML = """
[agents.desk]
envs = ["helpdesk"]
system_prompt = "You staff the IT helpdesk."
"""

TASK = {
    "id": "unlock-ada",
    "agent": "desk",
    "turns": ["ada@example.com cannot log in: her account is locked.", "Can she log in now?"],
    "seed": {"helpdesk": {"users": {"ada@example.com": "alovelace"}, "locked": ["alovelace"]}},
    "verifiers": [{"type": "items", "env": "helpdesk", "expected": []}],
}

SOLUTION = {
    "id": "unlock-ada",
    "turns": [
        {
            "calls": [
                {"tool": "find_user", "arguments": {"email": "ada@example.com"}},
                [
                    {"tool": "unlock_account", "arguments": {"username": "alovelace"}},
                    {"tool": "add_note", "arguments": {"text": "unlocked alovelace"}},
                ],
            ],
            "reply": "Unlocked alovelace.",
        },
        {
            "calls": [{"tool": "account_status", "arguments": {"username": "alovelace"}}],
            "reply": "Yes: the account is active.",
        },
    ],
}


@pytest.fixture
def helpdesk(tmp_path: Path) -> Path:
    files = {"solutions/train.jsonl": json.dumps(SOLUTION) + "\n"}
    return make_bundle(
        tmp_path / "helpdesk", toml=TOML, envs={"helpdesk": HELPDESK}, tasks={"train": [TASK]}, files=files
    )


def completions_of(solution: Solution) -> list[str]:
    """The reference play as a model writes it: a generation per step (its calls, made together),
    `end_turn` with each turn's reply, then nothing once the task is over."""
    written = []
    for turn in solution.turns:
        steps = [*turn.steps, ()]
        for step in steps:
            calls = [(call.tool, call.arguments) for call in step] or [("end_turn", {"reply": turn.reply})]
            written.append(
                "\n".join(
                    f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
                    for name, arguments in calls
                )
                + "<|im_end|>"
            )
    return [*written, "<|im_end|>"]


class PlaysTheSolution(ScriptedGenerate):
    """Each row's next completion is the play's next step: as many as the row has answered already."""

    def __init__(self, tokenizer: Any, completions: list[str]) -> None:
        super().__init__(tokenizer)
        self.completions = completions

    def _completion(self, row: int, text: str, first_call: bool) -> str:
        answered = text.count("<|im_start|>assistant") - 1  # the last one is where this answer goes
        return self.completions[answered]


@pytest.mark.timeout(120)
def test_a_multi_step_demonstration_is_the_conversation_grpo_trainers_tool_loop_builds_for_the_same_play(
    helpdesk: Path, tmp_path: Path
) -> None:
    solution = load_solutions(load_bundle(helpdesk), "train")["unlock-ada"]
    conversations: list[list[dict[str, Any]]] = []

    def conversation(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
        conversations.extend(
            prompt + completion for prompt, completion in zip(prompts, completions, strict=True)
        )
        return [0.0] * len(prompts)

    model, tokenizer = tiny_model_and_tokenizer()
    config = grpo_config(
        str(tmp_path / "out"),
        on_cpu=True,
        per_device_train_batch_size=2,
        max_completion_length=2048,
        max_tool_calling_iterations=8,
        max_steps=1,
    )
    with AgentEnv.local(helpdesk) as env:
        (demonstration,) = env.demonstrations("train", strict=True).to_list()
        trainer = GRPOTrainer(
            model=model,
            args=config,
            processing_class=tokenizer,
            reward_funcs=[conversation],
            train_dataset=env.dataset,
            environment_factory=env.factory,
        )
        generate = PlaysTheSolution(tokenizer, completions_of(solution))
        with mock.patch.object(trainer.model, "generate", side_effect=generate):
            trainer.train()

    assert trainer.state.log_history[0][f"rewards/{env.factory.__name__}/mean"] == 1.0, "it did not solve it"
    assert conversations == [demonstration["messages"]] * 2
    steps = [
        [call["function"]["name"] for call in message["tool_calls"]]
        for message in demonstration["messages"]
        if "tool_calls" in message
    ]
    assert steps == [
        ["find_user"],
        ["unlock_account", "add_note"],
        ["end_turn"],
        ["account_status"],
        ["end_turn"],
    ]
