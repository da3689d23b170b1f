"""The `trl` extra as a package: importing it without the extra names `[trl]`; it never imports TRL.

Each import runs in a fresh interpreter that blocks a package (a None entry in `sys.modules` makes its
import raise ImportError), as on a machine without it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import agent_env.training.trl

IMPORT_THE_EXTRA = """
try:
    import agent_env.training.trl
except ImportError as error:
    print(error)
else:
    print("imported", sorted({m.split('.')[0] for m in sys.modules} & {'trl', 'torch', 'transformers'}))
"""


def python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("missing", ["datasets", "openenv", "httpx"])
def test_importing_agent_env_training_trl_without_the_extra_fails_naming_trl(missing: str) -> None:
    printed = python(f"import sys; sys.modules[{missing!r}] = None\n" + IMPORT_THE_EXTRA)

    assert missing in printed
    assert "pip install 'agentenv-framework[trl]'" in printed


def test_importing_agent_env_training_trl_imports_neither_trl_nor_torch_nor_transformers() -> None:
    assert python("import sys\n" + IMPORT_THE_EXTRA) == "imported []"


def test_every_name_the_extra_exports_exists() -> None:
    assert [n for n in agent_env.training.trl.__all__ if not hasattr(agent_env.training.trl, n)] == []
