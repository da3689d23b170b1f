"""`agent-env eval`'s defaults for the model's options are the policies' own: the command line writes
them down because the policies' modules import openai or torch, which building its parser must not."""

from __future__ import annotations

import inspect

import pytest

from agent_env.cli import _eval as eval_command, main

pytestmark = pytest.mark.needs("eval_installed")


def test_eval_s_defaults_for_the_model_s_options_are_the_policies_own() -> None:
    from agent_env.eval import OpenAIPolicy, TransformersPolicy

    local = inspect.signature(TransformersPolicy.__init__).parameters
    endpoint = inspect.signature(OpenAIPolicy.__init__).parameters

    policies = {
        "max_new_tokens": local["max_new_tokens"].default,
        "batch": local["batch"].default,
        "max_retries": endpoint["max_retries"].default,
        "request_timeout": endpoint["request_timeout_s"].default,
    }
    written = dict(eval_command._DEFAULTS)

    assert written == policies


def test_eval_s_help_names_the_policies_request_timeout_and_retries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agent_env.eval import OpenAIPolicy

    endpoint = inspect.signature(OpenAIPolicy.__init__).parameters
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    shown = " ".join(capsys.readouterr().out.split())

    assert f"is an error (default: {endpoint['request_timeout_s'].default:g})" in shown
    assert f"retries of a failed request (default: {endpoint['max_retries'].default})" in shown
