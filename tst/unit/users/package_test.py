"""The `users` extra: a chat model's user needs it (the `openai` client), and without it a bundle whose
task has one is refused at load naming the install line, as the chat user's module does at import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tst.support.bundles import a_task, make_bundle

INSTALL = "pip install 'agentenv-framework[users]'"
WITHOUT_OPENAI = "import sys\nsys.modules['openai'] = None\n"


def python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_chat_user_without_the_extra_fails_naming_users() -> None:
    code = (
        WITHOUT_OPENAI
        + "try:\n    import agent_env.users._chat\nexcept ImportError as error:\n    print(error)\n"
    )

    printed = python(code)

    assert "openai" in printed and INSTALL in printed


def test_a_task_with_a_chat_model_s_user_is_refused_without_the_extra_naming_its_install_line(tmp_path: Path):
    user = {"model_url": "http://127.0.0.1:9/v1", "model": "m", "persona": "A reader."}
    root = make_bundle(tmp_path, tasks={"train": [a_task(user=user)]})
    code = (
        WITHOUT_OPENAI
        + "from agent_env import BundleError, load_bundle\n"
        + f"try:\n    load_bundle({json.dumps(str(root))})\nexcept BundleError as error:\n    print(error)\n"
    )

    assert f"user: a chat model's user needs the users extra, not installed here: {INSTALL}" in python(code)
