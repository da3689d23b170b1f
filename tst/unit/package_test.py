import ast
import subprocess
import sys
from pathlib import Path

import pytest

import agent_env
from tst.util import capabilities

PACKAGE = Path(agent_env.__file__).parent
HEAVY = ("openenv", "torch", "trl", "datasets", "transformers", "gradio")


def test_importing_agent_env_pulls_in_neither_openenv_nor_torch_nor_any_trainer():
    code = f"import sys, agent_env; print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )

    assert done.stdout.strip() == "[]"


def test_importing_agent_env_loads_none_of_its_modules_and_a_name_loads_only_its_own_module():
    code = (
        "import sys, agent_env\n"
        "mine = lambda: sorted(m for m in sys.modules if m.startswith('agent_env'))\n"
        "print(mine())\n"
        "agent_env.AccessChange\n"
        "print(mine())\n"
    )

    imported, used = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.splitlines()

    assert imported == "['agent_env', 'agent_env._lazy']"
    assert used == "['agent_env', 'agent_env._lazy', 'agent_env._specs']"


def in_the_core(path: Path) -> bool:
    """Whether `path` is the core's: not the server's, the trainer's or eval's (each behind an extra
    of its own), nor the client both of those stand on, nor a fence of OpenEnv, which only they import
    (`agent_env/_private/openenv_*.py`)."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] not in ("openenv", "client", "training", "eval") and not (
        parts[0] == "_private" and parts[-1].startswith("openenv_")
    )


def test_the_core_never_imports_openenv_or_a_trainer_anywhere_in_its_code():
    core = [p for p in PACKAGE.rglob("*.py") if in_the_core(p)]
    imported = set()
    for path in core:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {(path.name, a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add((path.name, node.module))

    assert [(name, m) for name, m in imported if m.split(".")[0] in HEAVY] == []
    assert [(name, m) for name, m in imported if m.startswith("agent_env._private.openenv_")] == []


@pytest.mark.needs(*capabilities.PACKAGE_EXTRAS)
def test_every_public_name_is_exported_from_the_package():
    missing = [name for name in agent_env.__all__ if not hasattr(agent_env, name)]

    assert missing == []
    assert {"load_bundle", "Env", "tool", "Episode", "BundleError", "EpisodeError", "Toolset"} <= set(
        agent_env.__all__
    )


def test_the_agent_env_console_script_is_installed_and_answers():
    script = Path(sys.executable).parent / "agent-env"

    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60, check=True)

    assert "check" in done.stdout and "play" in done.stdout and "replay" in done.stdout
