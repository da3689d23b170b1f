"""The local model's policy without the trainer's packages: importing agent_env.eval still works, and
making a policy names what to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.needs("eval_installed")
def test_a_local_model_without_trl_installed_fails_naming_the_install_line_while_agent_env_eval_imports():
    blocked = (
        "import sys; sys.modules['trl'] = None\n"
        "from agent_env.eval import TransformersPolicy\n"
        "TransformersPolicy(object(), object())\n"
    )
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120)

    assert done.returncode != 0
    assert "ImportError: a local model needs trl, not installed here: pip install trl torch" in done.stderr
