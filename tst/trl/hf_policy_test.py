"""A local Hugging Face model measured by `agent-env eval`: transformers' generation, TRL's parser.

The model is the demo's tiny one, built offline. The evaluation runs its real generation (a random
model, so it answers with text); the parsing tests stand in for `generate` only to choose what the
completion says, and build it as the chat template itself renders a tool call. The batching tests
redraw its weights wider, so that its greedy answers differ from prompt to prompt (the demo's
init answers every prompt with newlines), some ending at an eos and some at max_new_tokens.
"""

from __future__ import annotations

import inspect
import json
import os
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TRL_EXPERIMENTAL_SILENCE"):
    os.environ[variable] = "1"

import torch  # noqa: E402

from agent_env import Trajectory, read_trajectories  # noqa: E402
from agent_env.cli import main  # noqa: E402
from agent_env.eval import (  # noqa: E402
    AssistantMessage,
    PlaySettings,
    PolicyError,
    ToolCall,
    TransformersPolicy,
    evaluate,
    play_sample,
)
from agent_env.training.trl import AgentEnv  # noqa: E402
from examples.train_grpo import tiny_model_and_tokenizer  # noqa: E402
from tst.support.wharf import WHARF  # noqa: E402

ADD_CRATE = {
    "type": "function",
    "function": {
        "name": "add_crate",
        "description": "Store a crate in a bay.",
        "parameters": {
            "type": "object",
            "properties": {"crate": {"type": "string"}, "bay": {"type": "integer"}},
            "required": ["crate", "bay"],
        },
    },
}
ASKED = [{"role": "user", "content": "Store crate C1 in bay 2."}]
ASKINGS = [
    [{"role": "user", "content": f"Store crate C{n} in bay {n}." + " The pantry holds flour and rice." * n}]
    for n in range(8)
]
"""Prompts of lengths from short to long, so a batch of them is padded."""


def templated_call(tokenizer: Any, name: str, arguments: dict[str, Any]) -> str:
    """The completion the chat template renders for an assistant message making this one call."""
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}],
    }
    prompt = tokenizer.apply_chat_template(
        ASKED, tools=[ADD_CRATE], add_generation_prompt=True, tokenize=False
    )
    whole = tokenizer.apply_chat_template([*ASKED, call], tools=[ADD_CRATE], tokenize=False)
    assert whole.startswith(prompt)
    return str(whole[len(prompt) :]).rstrip("\n")


def answering(policy: TransformersPolicy, completion: str) -> Any:
    """`generate` standing in to write `completion` after the prompt, and nothing else."""
    tokenizer = policy.tokenizer

    def generate(input_ids: torch.Tensor, **_: Any) -> torch.Tensor:
        ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
        return torch.cat([input_ids, torch.tensor([ids], dtype=input_ids.dtype)], dim=-1)

    return mock.patch.object(policy.model, "generate", side_effect=generate)


def test_a_tool_call_in_the_templates_format_parses_through_trls_parser_into_a_typed_tool_call() -> None:
    model, tokenizer = tiny_model_and_tokenizer()
    policy = TransformersPolicy(model, tokenizer, max_new_tokens=8)
    completion = templated_call(tokenizer, "add_crate", {"crate": "C1", "bay": 2})
    assert "<tool_call>" in completion

    with answering(policy, completion):
        answer = policy(ASKED, [ADD_CRATE])

    assert [(c.name, c.arguments, c.valid) for c in answer.tool_calls] == [
        ("add_crate", {"crate": "C1", "bay": 2}, True)
    ]
    assert answer.content == ""
    assert isinstance(answer.tool_calls[0], ToolCall)


@pytest.mark.parametrize(
    "completion",
    [
        '<tool_call>\n{"name": "add_crate", "argu\n</tool_call><|im_end|>',
        "<tool_call>\nadd_crate(C1, 2)\n</tool_call><|im_end|>",
        "Crate C1 is in bay 2.<|im_end|>",
    ],
    ids=["torn-json", "not-json", "prose"],
)
def test_a_completion_trls_parser_cannot_read_as_a_tool_call_stays_plain_text(completion: str) -> None:
    model, tokenizer = tiny_model_and_tokenizer()
    policy = TransformersPolicy(model, tokenizer, max_new_tokens=8)

    with answering(policy, completion):
        answer = policy(ASKED, [ADD_CRATE])

    assert answer.tool_calls == ()
    assert answer.content == completion.removesuffix("<|im_end|>")


def test_eval_of_the_example_bundle_with_the_tiny_model_runs_to_the_end_and_every_trajectory_is_schema_valid(
    tmp_path: Path,
) -> None:
    model, tokenizer = tiny_model_and_tokenizer()
    policy = TransformersPolicy(model, tokenizer, max_new_tokens=12)

    result = evaluate(
        WHARF,
        policy,
        split="eval",
        samples=1,
        concurrency=4,
        settings=PlaySettings(max_tool_calls=2),
        model="tiny",
        out=tmp_path,
    )

    skipped: list[tuple[Path, int, str]] = []
    trajectories = list(read_trajectories(tmp_path, skipped=lambda *line: skipped.append(line)))
    assert skipped == []
    assert len(trajectories) == len(result.tasks) == 11
    assert all(isinstance(t, Trajectory) and t.recorded_by == "eval" for t in trajectories)
    assert [t.outcome.kind for t in trajectories] == ["scored"] * 11
    assert (tmp_path / "results.json").is_file()


def test_agent_env_eval_with_a_saved_model_folder_as_model_plays_it_locally(
    tmp_path: Path, capsys: Any
) -> None:
    model, tokenizer = tiny_model_and_tokenizer()
    folder, out = tmp_path / "checkpoint", tmp_path / "out"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)

    args = ["--model", str(folder), "--max-new-tokens", "4", "--max-tool-calls", "2", "--out", str(out)]
    code = main(["eval", str(WHARF), *args])

    printed, err = capsys.readouterr()
    assert code == 0, err
    assert "eval: 11/11 episodes" in err and "0 errors" in err
    assert len(list(read_trajectories(out))) == 11
    assert "all    11 tasks" in printed


def test_a_local_model_sees_the_tools_as_grpo_trainer_shows_them_not_as_the_task_api_lists_them() -> None:
    model, tokenizer = tiny_model_and_tokenizer()
    policy = TransformersPolicy(model, tokenizer, max_new_tokens=4)
    seen: list[str] = []

    def generate(input_ids: torch.Tensor, **_: Any) -> torch.Tensor:
        seen.append(tokenizer.decode(input_ids[0]))
        ids = tokenizer("Done.<|im_end|>", add_special_tokens=False)["input_ids"]
        return torch.cat([input_ids, torch.tensor([ids], dtype=input_ids.dtype)], dim=-1)

    with AgentEnv.local(WHARF) as env:
        row = dict(env.dataset[0])
        environment = env.factory[row.pop("environment")]()
        offered = [  # what GRPOTrainer hands the chat template: the environment's bound methods
            getattr(environment, name)
            for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")
        ]
        as_trained = tokenizer.apply_chat_template(
            row["prompt"], tools=offered, add_generation_prompt=True, tokenize=False
        )
        (task,) = [task for task in env._api.tasks("train") if task.index == row["index"]]
        with mock.patch.object(model, "generate", side_effect=generate):
            play_sample(env.url, task, policy, model="tiny")

    assert seen[0] == as_trained
    assert '"minimum"' not in seen[0]  # the Task API's bounds, which get_json_schema cannot carry


def talkative_model_and_tokenizer() -> tuple[Any, Any]:
    """The tiny model, its weights redrawn (seeded) wide enough that what it says depends on the prompt,
    ending an answer at a newline too (a second eos), which it writes in some answers and not others."""
    model, tokenizer = tiny_model_and_tokenizer()
    draw = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "norm" not in name:
                weight.copy_(torch.randn(weight.shape, generator=draw) * 0.3)
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"]
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, *newline]
    return model, tokenizer


def asked_at_once(
    policy: TransformersPolicy, askings: list[list[dict[str, Any]]]
) -> list[AssistantMessage | Exception]:
    """Each conversation asked from a thread of its own, all released together, as evaluate's workers ask."""
    answers: list[AssistantMessage | Exception] = [AssistantMessage()] * len(askings)
    start = threading.Barrier(len(askings))

    def ask(n: int) -> None:
        start.wait(timeout=60)
        try:
            answers[n] = policy(askings[n], [ADD_CRATE])
        except Exception as exc:
            answers[n] = exc

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(askings))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    return answers


def test_a_batched_policy_answers_concurrent_callers_greedily_as_the_unbatched_one_answers_each() -> None:
    model, tokenizer = talkative_model_and_tokenizer()
    alone = TransformersPolicy(model, tokenizer, max_new_tokens=48)
    batched = TransformersPolicy(model, tokenizer, max_new_tokens=48, batch=len(ASKINGS))

    generate, written = model.generate, []

    def generating(**options: Any) -> torch.Tensor:
        generated = generate(**options)
        written.append(generated.shape[1] - options["input_ids"].shape[1])
        return generated

    with mock.patch.object(model, "generate", side_effect=generating):
        expected = [alone(asking, [ADD_CRATE]) for asking in ASKINGS]
    answers = asked_at_once(batched, ASKINGS)

    assert len({answer.content for answer in expected}) == len(ASKINGS)  # each prompt its own answer
    assert 0 < written.count(48) < len(ASKINGS)  # some ended at an eos, the others at max_new_tokens
    assert answers == expected


def test_a_batch_of_concurrent_callers_runs_fewer_generate_calls_than_callers() -> None:
    model, tokenizer = talkative_model_and_tokenizer()
    policy = TransformersPolicy(model, tokenizer, max_new_tokens=16, batch=len(ASKINGS))

    with mock.patch.object(model, "generate", wraps=model.generate) as generate:
        answers = asked_at_once(policy, ASKINGS)

    assert all(isinstance(answer, AssistantMessage) for answer in answers)
    assert 1 <= generate.call_count < len(ASKINGS)
    assert max(call.kwargs["input_ids"].shape[0] for call in generate.call_args_list) > 1


def test_a_failed_generation_reaches_every_caller_of_its_batch_as_a_policy_error() -> None:
    model, tokenizer = talkative_model_and_tokenizer()
    policy = TransformersPolicy(model, tokenizer, max_new_tokens=16, batch=4)

    def out_of_memory(**_: Any) -> torch.Tensor:
        time.sleep(0.2)  # a while into the batch, so the callers who come meanwhile wait for the next
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    with mock.patch.object(model, "generate", side_effect=out_of_memory) as generate:
        answers = asked_at_once(policy, ASKINGS[:4])

    assert generate.call_count < 4
    assert [type(answer) for answer in answers] == [PolicyError] * 4
    assert {str(answer) for answer in answers} == {
        "generation failed: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    }


def test_evaluate_with_episodes_generated_in_batches_scores_each_task_as_one_at_a_time_does() -> None:
    model, tokenizer = talkative_model_and_tokenizer()
    runs, widest = {}, {}
    for batch in (1, 4):
        policy = TransformersPolicy(model, tokenizer, max_new_tokens=12, batch=batch)
        settings = PlaySettings(max_tool_calls=2)
        with mock.patch.object(model, "generate", wraps=model.generate) as generate:
            runs[batch] = evaluate(WHARF, policy, concurrency=4, settings=settings, model="tiny")
        widest[batch] = max(call.kwargs["input_ids"].shape[0] for call in generate.call_args_list)

    def replies(result: Any) -> dict[int, list[str | None]]:
        return {t.task.index: [turn.reply for turn in t.turns] for t in result.trajectories}

    def scores(result: Any) -> list[tuple[int, float | None]]:
        return [(task.index, task.mean_score) for task in result.tasks]

    assert widest[1] == 1 < widest[4] <= 4
    assert scores(runs[4]) == scores(runs[1])
    assert replies(runs[4]) == replies(runs[1])
    assert len({str(said) for said in replies(runs[1]).values()}) > 1  # the tasks got different answers
    assert runs[4].errors == runs[1].errors == 0


def test_sampled_answers_one_at_a_time_are_the_same_whatever_the_concurrency_so_pass_rates_repeat() -> None:
    model, tokenizer = talkative_model_and_tokenizer()

    def sampled(concurrency: int) -> dict[str, list[str | None]]:
        policy = TransformersPolicy(model, tokenizer, max_new_tokens=12, temperature=1.0, seed=5)
        said: dict[str, list[str | None]] = {}
        lock = threading.Lock()

        def answering(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
            answer = policy(messages, tools)  # what the model said: a text answer is no reply to record
            with lock:
                said.setdefault(str(messages[:2]), []).append(answer.content)
            return answer

        settings = PlaySettings(max_tool_calls=2)
        evaluate(WHARF, answering, samples=3, concurrency=concurrency, settings=settings, model="tiny")
        return {asked: sorted(answers, key=str) for asked, answers in said.items()}

    one_at_a_time, four_at_once = sampled(1), sampled(4)

    assert four_at_once == one_at_a_time
    assert any(len(set(answers)) > 1 for answers in one_at_a_time.values())


def test_a_prompt_sampled_again_gets_a_new_sample_and_a_new_policy_with_the_seed_the_same_ones() -> None:
    model, tokenizer = talkative_model_and_tokenizer()
    first, again = (TransformersPolicy(model, tokenizer, max_new_tokens=16, temperature=1.0) for _ in "12")

    answers = [first(ASKED, [ADD_CRATE]).content for _ in range(4)]

    assert len(set(answers)) > 1
    assert [again(ASKED, [ADD_CRATE]).content for _ in range(4)] == answers


def test_a_batch_under_1_is_refused_naming_what_it_must_be() -> None:
    model, tokenizer = tiny_model_and_tokenizer()

    refused = r"batch must be >= 1 \(the requests one generation answers\), got 0"
    with pytest.raises(ValueError, match=refused):
        TransformersPolicy(model, tokenizer, batch=0)


def test_agent_env_eval_with_batch_plays_a_local_model_in_batches_and_records_the_batch_in_its_settings(
    tmp_path: Path, capsys: Any
) -> None:
    model, tokenizer = talkative_model_and_tokenizer()
    folder, out = tmp_path / "checkpoint", tmp_path / "out"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)

    args = ["--model", str(folder), "--max-new-tokens", "4", "--batch", "4", "--concurrency", "4"]
    code = main(["eval", str(WHARF), *args, "--max-tool-calls", "2", "--out", str(out)])

    _, err = capsys.readouterr()
    assert code == 0, err
    assert "eval: 11/11 episodes" in err and "0 errors" in err
    assert json.loads((out / "results.json").read_text())["settings"]["batch"] == 4
