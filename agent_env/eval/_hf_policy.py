"""The policy of a local Hugging Face model: transformers' generation, TRL's parser for its template.

Eval must read a completion exactly as training reads it, so nothing here parses by itself: the
tokenizer gets its response template the way GRPOTrainer installs it (`add_response_schema`, for
TRL's bundled chat templates), the prompt is rendered with the chat template GRPOTrainer would use
(its training template when the model's is not prefix-preserving), with the tools as GRPOTrainer
shows them (`offered_tools`, not the Task API's schemas), and each completion goes through
TRL's `parse_response`, prompt ids as the prefix and the tools' schemas for typing, as
GRPOTrainer calls it. A completion it cannot parse as a tool call is plain text, which ends the
turn. torch and trl are the trainer's to pin, so they are imported here only when a policy is made.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_env._errors import AgentEnvError, ArgumentError
from agent_env.eval._gather import Gatherer
from agent_env.eval._policy import AssistantMessage, Message, PolicyError, ToolCall
from agent_env.eval._require import require_local_model

DEFAULT_MAX_NEW_TOKENS = 512
DEFAULT_SEED = 0


class LocalModelError(AgentEnvError):
    """The local model cannot play: what is wrong, in one line, and what to do."""


class TransformersPolicy:
    """`model.generate` over the chat template's rendering; temperature 0 is greedy, else seeded sampling.

    One generation runs at a time (a model is not made for concurrent `generate` calls). With
    `batch` 1 each caller's prompt is generated alone, so `--concurrency` overlaps only the episodes'
    tool calls with generation. With `batch` N, up to N concurrent callers' prompts go into one
    `generate` call, left-padded with their attention mask: greedy answers are the unbatched ones as
    far as floating point allows. Sampling is seeded per `generate` call from `seed`, the call's
    prompts, and how many calls with the same prompts came before it, never from the order callers
    arrive in: with `batch` 1 a task's K samples, and so its pass rate, are the same on every run
    whatever `--concurrency` (unless another task's conversation is the same word for word: the two
    then share those draws); with `batch` N only when the same prompts meet in the same batches,
    which thread timing decides.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = 0.0,
        seed: int = DEFAULT_SEED,
        batch: int = 1,
    ) -> None:
        require_local_model()
        if max_new_tokens < 1:
            raise ArgumentError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if temperature < 0:
            raise ArgumentError(f"temperature must be >= 0, got {temperature}")
        self._generate: Gatherer[list[int], list[int]] = Gatherer(self._generate_batch, batch)
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature, self.seed = max_new_tokens, temperature, seed
        self._chat_template = _as_training_renders(tokenizer)
        self._eos_ids = _eos_ids(model, tokenizer)
        pad = tokenizer.pad_token_id
        self._pad_id: int = pad if pad is not None else min(self._eos_ids, default=0)  # masked out anyway
        self._asked: Counter[bytes] = Counter()
        self._requests = itertools.count(1)
        self._offered: dict[str, list[dict[str, Any]]] = {}

    @classmethod
    def from_folder(cls, path: str | Path, **options: Any) -> TransformersPolicy:
        """The model and tokenizer saved in `path` (`save_pretrained`), loaded offline-capable from disk."""
        folder = Path(path)
        if not (folder / "config.json").is_file():
            problem = "does not exist" if not folder.exists() else "holds no config.json"
            raise LocalModelError(
                f"{folder} {problem}: pass a Hugging Face model folder (save_pretrained's) as --model, "
                "or an endpoint's model name with --model-url"
            )
        require_local_model()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(folder)
            model = AutoModelForCausalLM.from_pretrained(folder)
        except (OSError, ValueError, KeyError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise LocalModelError(f"{folder} is not a model transformers can load: {first}") from None
        return cls(model, tokenizer, **options)

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> AssistantMessage:
        from trl.chat_template_utils import parse_response

        request = next(self._requests)
        tools = self._as_trained(tools)
        prompt_ids: list[int] = self.tokenizer.apply_chat_template(
            messages,
            tools=tools or None,  # as GRPOTrainer: some templates render tool boilerplate for []
            chat_template=self._chat_template,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
        )["input_ids"]
        try:
            completion = self._generate(prompt_ids)
        except (RuntimeError, ValueError) as exc:
            raise PolicyError(f"generation failed: {type(exc).__name__}: {exc}") from None
        schemas: list[dict[Any, Any] | Callable[..., Any]] = list(tools)
        parsed = parse_response(self.tokenizer, completion, prefix=prompt_ids, tools=schemas)
        return _answer(parsed, request)

    def _generate_batch(self, prompts: list[list[int]]) -> list[list[int]]:
        """One `generate` call over the prompts, left-padded; each completion up to its own eos."""
        import torch

        width = max(len(ids) for ids in prompts)
        padded = [[self._pad_id] * (width - len(ids)) + ids for ids in prompts]
        attention = [[0] * (width - len(ids)) + [1] * len(ids) for ids in prompts]
        sampling = self.temperature > 0
        options: dict[str, Any] = (
            {"do_sample": True, "temperature": self.temperature} if sampling else {"do_sample": False}
        )
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(self._seed_for(prompts))
            generated = self.model.generate(
                input_ids=torch.tensor(padded, device=self.model.device),
                attention_mask=torch.tensor(attention, device=self.model.device),
                max_new_tokens=self.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                **options,
            )
        return [_until_eos(row[width:].tolist(), self._eos_ids) for row in generated]

    def _seed_for(self, prompts: list[list[int]]) -> int:
        """The seed of a call over `prompts`: a digest of this policy's seed, the prompts, and how many
        calls over the same prompts came before. The gatherer runs one batch at a time, so the count
        is this policy's alone."""
        asked = hashlib.blake2b(json.dumps(prompts).encode(), digest_size=16).digest()
        before = self._asked[asked]
        self._asked[asked] += 1
        digest = hashlib.blake2b(f"{self.seed}:{before}:".encode() + asked, digest_size=8).digest()
        return int.from_bytes(digest, "little") >> 1

    def _as_trained(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools as GRPOTrainer shows them to the model (`offered_tools`), not as the Task API
        lists them: a model trained through `AgentEnv` is measured on the prompt it was trained on.
        Tools TRL could not show (the factory refuses them, so no model trained on them) go as listed."""
        from agent_env.client._signatures import UnsupportedToolError
        from agent_env.client._tools import END_TURN, offered_tools

        key = json.dumps(tools)
        if key not in self._offered:
            listed = [tool for tool in tools if tool.get("function", {}).get("name") != END_TURN]
            try:
                self._offered[key] = offered_tools(listed)
            except UnsupportedToolError:
                self._offered[key] = tools
        return self._offered[key]


def _as_training_renders(tokenizer: Any) -> str | None:
    """Install TRL's response template and pick the chat template as GRPOTrainer's `__init__` does."""
    from trl.chat_template_utils import (
        add_response_schema,
        get_training_chat_template,
        is_chat_template_prefix_preserving,
        supports_tool_calling,
    )

    if not supports_tool_calling(tokenizer):
        raise LocalModelError(
            "the tokenizer's chat template cannot render tool calls (TRL's supports_tool_calling): "
            "give it a tool-calling template, e.g. one of trl.chat_template_utils'"
        )
    try:
        has_parser = any(
            getattr(tokenizer, a, None) is not None for a in ("response_template", "response_schema")
        )
        if not has_parser:
            add_response_schema(tokenizer)
        if is_chat_template_prefix_preserving(tokenizer):
            return None
        template: str | None = get_training_chat_template(tokenizer)
        return template
    except ValueError as exc:
        raise LocalModelError(
            f"TRL cannot parse this chat template's tool calls, so neither could training: {exc}"
        ) from None


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every id that ends a completion: the model's declared eos ids and the tokenizer's, as GRPOTrainer."""
    declared = model.generation_config.eos_token_id
    ids = set() if declared is None else {declared} if isinstance(declared, int) else set(declared)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


def _until_eos(ids: list[int], eos_ids: set[int]) -> list[int]:
    """The completion up to and including its first eos, as GRPOTrainer masks it."""
    end = next((i for i, token in enumerate(ids) if token in eos_ids), None)
    return ids if end is None else ids[: end + 1]


def _answer(parsed: dict[str, Any], call: int) -> AssistantMessage:
    """TRL's parsed message as this package's answer; a call of another type is kept, as invalid."""
    calls = []
    for n, raw in enumerate(parsed.get("tool_calls") or []):
        call_id = f"call_{call}_{n}"
        function = raw.get("function", raw) if raw.get("type", "function") == "function" else None
        if function is None:
            calls.append(ToolCall(call_id, "", ""))
            continue
        arguments = function.get("arguments")
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append(ToolCall.parsed(call_id, str(function.get("name", "")), text))
    return AssistantMessage(str(parsed.get("content") or ""), tuple(calls))
