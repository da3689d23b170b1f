"""The `trl` extra as a package: importing it without the extra names `[trl]`; it never imports TRL, nor
agent_env's server or engine.

Each import runs in a fresh interpreter that blocks a package (a None entry in `sys.modules` makes its
import raise ImportError), as on a machine without it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import agent_env.training.trl

pytestmark = pytest.mark.needs("trl_installed")

IMPORT_THE_EXTRA = """
try:
    import agent_env.training.trl
except ImportError as error:
    print(error)
else:
    print("imported", sorted({m.split('.')[0] for m in sys.modules} & {'trl', 'torch', 'transformers'}))
"""


SHARED_WITH_THE_SERVER = {
    "agent_env",
    "agent_env._errors",
    "agent_env._extras",
    "agent_env._lazy",
    "agent_env._private",
    "agent_env._private.openenv_client",
    "agent_env._private.openenv_core",
    "agent_env._private.threading_exit",
    "agent_env._unicode",
    "agent_env._curriculum",
    "agent_env._error_types",
    "agent_env._names",
    "agent_env._specs",
    "agent_env.openenv",
    "agent_env.openenv._require",
}
"""agent_env's modules the trainer's side may load besides its own and the client's: what the wire
contract (`agent_env.client._wire`) stands on (its error codes, their root and the name rules), the
package inits above it, the fences of what it relies on, the deadlines both sides keep, the online
curriculum's policy (its knobs, which the trainer chooses and the server runs: plain data and
arithmetic, no engine), and the server package's init with its check of OpenEnv's version, which
loads no module of the server."""

TRAINER_SIDE = ("agent_env.training", "agent_env.client")
"""The trainer's own modules and the client they stand on (which eval stands on too)."""


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


def test_importing_agent_env_training_trl_loads_no_module_of_agent_env_s_server_or_engine() -> None:
    code = "import sys, agent_env.training.trl; print(*(m for m in sys.modules if m.startswith('agent_env')))"

    loaded = set(python(code).split())

    offenders = sorted(m for m in loaded - SHARED_WITH_THE_SERVER if not m.startswith(TRAINER_SIDE))
    assert {"agent_env.training.trl", "agent_env.client._wire"} <= loaded
    assert offenders == [], f"importing agent_env.training.trl loaded {', '.join(offenders)}"


def test_every_name_the_extra_exports_exists() -> None:
    assert [n for n in agent_env.training.trl.__all__ if not hasattr(agent_env.training.trl, n)] == []


READING_RESULTS = {
    "agent_env.eval",
    "agent_env.eval._require",
    "agent_env.eval._passk",
    "agent_env.eval._results",
    "agent_env._table",
    "agent_env._trajectory",
    "agent_env._events",
}
"""What reading eval results (`tasks_with_signal`) adds: the results' models, the trajectory's schema."""


def test_reading_eval_results_on_the_trainer_s_side_loads_no_module_of_the_server_or_engine() -> None:
    code = (
        "import sys, agent_env.training.trl, agent_env.eval._results\n"
        "print(*(m for m in sys.modules if m.startswith('agent_env')))"
    )

    loaded = set(python(code).split())

    offenders = sorted(
        m for m in loaded - SHARED_WITH_THE_SERVER - READING_RESULTS if not m.startswith(TRAINER_SIDE)
    )
    assert offenders == [], f"reading eval results loaded {', '.join(offenders)}"
