"""TRL's own GRPOTrainer trains through `AgentEnv` over three `agent-env serve` processes, one killed
mid-episode.

Each step plays 48 rollouts of the example bundle's `store-crate-000` (24 rows, 2 generations
each). The tiny model's `generate` is stood in for, as in `grpo_test.py`: each rollout stores the
crate, ends its turn, then answers. At the second step, once the rollouts have their first tool
results, the second server is SIGKILLed: its rollouts' next calls fail as tool errors, their rewards
are NaN, and the step goes on; from the third step the rollouts play on the two servers left.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from trl import GRPOTrainer  # noqa: E402

from agent_env.training.trl import AgentEnv  # noqa: E402
from examples.train_grpo import grpo_config, tiny_model_and_tokenizer  # noqa: E402
from tst.support.cli_server import agent_env_serves  # noqa: E402
from tst.support.wharf import SINGLE_TURN_TASK, WHARF  # noqa: E402
from tst.trl._generated import followed_by  # noqa: E402

ROWS = 24
GENERATIONS = 2
STORE = {"name": "add_crate", "arguments": {"crate": "C17", "bay": 5, "kind": "dry"}}
END = {"name": "end_turn", "arguments": {"reply": "Stored C17 in bay 5."}}


def call(tool: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps(tool)}\n</tool_call><|im_end|>"


class StandInGenerate:
    """`generate` for the tiny model: each rollout stores the crate, ends its turn, then answers; once
    `armed`, the first generation that follows tool results calls `kill` first."""

    def __init__(self, tokenizer: Any, kill: Callable[[], None]) -> None:
        self.tokenizer = tokenizer
        self.kill = kill
        self.armed = False

    def __call__(self, input_ids: torch.Tensor, attention_mask: Any = None, **_: Any) -> torch.Tensor:
        texts = self.tokenizer.batch_decode(input_ids)
        if self.armed and any("<tool_response>" in text for text in texts):
            self.armed = False
            self.kill()
        completions = [self._completion(text.count("<tool_response>")) for text in texts]
        return followed_by(self.tokenizer, input_ids, completions)

    @staticmethod
    def _completion(responses: int) -> str:
        return [call(STORE), call(END)][responses] if responses < 2 else "Stored.<|im_end|>"


class ArmAfterFirstStep(TrainerCallback):  # type: ignore[misc]
    def __init__(self, generate: StandInGenerate, held: Callable[[], list[int]]) -> None:
        self.generate = generate
        self.held = held
        self.after_first: list[int] | None = None

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if state.global_step == 1:
            self.after_first = self.held()
            self.generate.armed = True


def test_grpo_trainer_over_three_servers_spreads_48_rollouts_and_trains_on_when_one_is_killed(
    tmp_path: Path,
) -> None:
    import httpx

    servers = [(WHARF, ()) for _ in range(3)]
    with agent_env_serves(servers, log=tmp_path, tmpdir=tmp_path) as started:
        urls = [url for _, url in started]

        def held() -> list[int]:
            return [
                int(httpx.get(f"{url}/wharf/status", timeout=10).json()["sessions"]["held"])
                if process.poll() is None
                else -1
                for (process, _), url in zip(started, urls, strict=True)
            ]

        killed: list[subprocess.Popen[bytes]] = []

        def kill() -> None:
            process = started[1][0]
            process.kill()
            process.wait()
            killed.append(process)

        with AgentEnv(urls) as env:
            row = env.dataset[SINGLE_TURN_TASK]
            dataset = Dataset.from_list([row] * ROWS)
            model, tokenizer = tiny_model_and_tokenizer()
            config = grpo_config(
                str(tmp_path / "out"),
                on_cpu=True,
                per_device_train_batch_size=ROWS * GENERATIONS,
                num_generations=GENERATIONS,
                max_completion_length=400,
                max_steps=3,
                shuffle_dataset=False,
            )
            generate = StandInGenerate(tokenizer, kill)
            arm = ArmAfterFirstStep(generate, held)
            trainer = GRPOTrainer(
                model=model,
                args=config,
                processing_class=tokenizer,
                train_dataset=dataset,
                environment_factory=env.factory,
                callbacks=[arm],
            )
            with mock.patch.object(trainer.model, "generate", side_effect=generate):
                trainer.train()
            after = held()

    logged = [entry for entry in trainer.state.log_history if "rewards/dock/mean" in entry]
    assert len(logged) == 3, trainer.state.log_history
    first, killed_step, later = logged
    assert arm.after_first == [16, 16, 16]
    assert killed and killed[0].returncode == -9
    assert (first["rewards/dock/mean"], first["tools/failure_frequency"]) == (1.0, 0)
    # its 16 rollouts' last end_turn is sent and not waited for (the task is over either way), so no
    # call fails; their rewards, waited for by get_reward, are NaN, and the mean of the rest is 1
    assert killed_step["tools/failure_frequency"] == 0
    assert killed_step["rewards/dock/mean"] == 1.0
    assert (later["rewards/dock/mean"], later["tools/failure_frequency"]) == (1.0, 0)
    assert after[0] + after[2] == 48 and after[1] == -1
