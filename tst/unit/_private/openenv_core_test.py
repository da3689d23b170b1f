"""agent_env loads OpenEnv without the Gradio web interface it never serves, and takes nothing away:
OpenEnv's own `create_app` still builds that interface when asked, and a process that had gradio
already keeps OpenEnv as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.needs("openenv_installed")

ROUTES_WITH_THE_WEB_INTERFACE = textwrap.dedent(
    """
    from openenv.core.env_server import Action, Environment, Observation, State, create_app

    class Ping(Environment):
        def reset(self, seed=None, episode_id=None, **kwargs):
            return Observation()

        def step(self, action, timeout_s=None, **kwargs):
            return Observation()

        @property
        def state(self):
            return State()

    routes = [route.path for route in create_app(Ping, Action, Observation, env_name="ping").routes]
    """
)


def run(code: str, **environment: str) -> dict[str, object]:
    """What the last line `code` prints in a fresh interpreter, read as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **environment},
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return answer


@pytest.mark.needs("trl_installed")
def test_the_trainer_s_side_and_the_server_load_openenv_without_gradio_and_gradio_imports_after() -> None:
    answer = run(
        """
        import json, sys
        from agent_env.training.trl import AgentEnv
        import agent_env.openenv._app
        import openenv.core.env_server as server
        loaded = "gradio" in sys.modules
        import gradio
        print(json.dumps({"gradio_loaded": loaded, "web_interface": repr(server.create_web_interface_app),
                          "gradio_imports_after": hasattr(gradio, "Blocks")}))
        """
    )

    assert answer == {"gradio_loaded": False, "web_interface": "None", "gradio_imports_after": True}


def test_openenv_s_create_app_still_builds_its_web_interface_when_asked_after_agent_env_loaded_openenv() -> (
    None
):
    answer = run(
        "import json, sys\nimport agent_env.openenv._app\nbefore = 'gradio' in sys.modules\n"
        + ROUTES_WITH_THE_WEB_INTERFACE
        + "print(json.dumps({'before': before, 'web': '/web' in routes}))",
        ENABLE_WEB_INTERFACE="true",
    )

    assert answer == {"before": False, "web": True}


def test_a_process_that_imported_gradio_first_gets_openenv_as_it_is() -> None:
    answer = run(
        """
        import json
        import gradio
        import agent_env.openenv._app
        import openenv.core.env_server as server
        print(json.dumps({"web_interface": server.create_web_interface_app is not None}))
        """
    )

    assert answer == {"web_interface": True}
