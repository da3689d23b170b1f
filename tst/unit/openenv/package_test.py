"""The `openenv` extra as a package: what importing it needs, what it exports, and that the core needs
none of it.

Each import without OpenEnv runs in a fresh interpreter that blocks `openenv` (a None entry in
`sys.modules` makes `import openenv` raise ImportError), as on a machine without the extra.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import agent_env.openenv

pytestmark = pytest.mark.needs("openenv_installed")

WHARF = Path(__file__).parents[3] / "examples" / "wharf"
INSTALL = "pip install 'agentenv-framework[openenv]'"
WITHOUT_OPENENV = "import sys; sys.modules['openenv'] = None\n"
IMPORT_THE_EXTRA = """
try:
    import agent_env.openenv
except ImportError as error:
    print(error)
else:
    print("imported")
"""


def python(code: str) -> str:
    """What `code` prints, run by a fresh interpreter of this environment; fails if it fails."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_extra_without_openenv_fails_with_the_line_that_installs_it() -> None:
    printed = python(WITHOUT_OPENENV + IMPORT_THE_EXTRA)

    assert printed == f"agent_env.openenv needs OpenEnv 0.10, which is not installed: {INSTALL}"


@pytest.mark.parametrize("version", ["0.9.1", "0.11.0", "1.10", "0.100"])
def test_importing_the_extra_with_another_openenv_version_fails_naming_the_version_and_the_install_line(
    version: str,
) -> None:
    pretend = (
        "import importlib.metadata as metadata\n"
        "real = metadata.version\n"
        f"metadata.version = lambda name: {version!r} if name == 'openenv' else real(name)\n"
    )

    printed = python(pretend + IMPORT_THE_EXTRA)

    assert printed == f"agent_env.openenv needs OpenEnv 0.10.*, found {version}: {INSTALL}"


def test_importing_the_extra_with_openenv_core_in_place_of_openenv_says_to_swap_them() -> None:
    pretend = (
        "import importlib.metadata as metadata\n"
        "real = metadata.version\n"
        "def version(name):\n"
        "    if name == 'openenv':\n"
        "        raise metadata.PackageNotFoundError(name)\n"
        "    return real(name)\n"
        "metadata.version = version\n"
    )

    printed = python(pretend + IMPORT_THE_EXTRA)

    assert printed == (
        "agent_env.openenv needs the `openenv` distribution, not `openenv-core`: "
        f"pip uninstall openenv-core; {INSTALL}"
    )


def test_without_openenv_the_core_still_imports_and_loads_a_bundle() -> None:
    load = (
        "import agent_env\n"
        f"bundle = agent_env.load_bundle({str(WHARF)!r})\n"
        "print(bundle.name, *bundle.splits)\n"
    )

    printed = python(WITHOUT_OPENENV + load)

    assert printed == "wharf eval train"


def test_every_name_the_extra_exports_exists() -> None:
    exported = agent_env.openenv.__all__

    assert [name for name in exported if not hasattr(agent_env.openenv, name)] == []
    assert len(set(exported)) == len(exported)
    assert {"build_app", "serve", "BackgroundServer", "AgentEnvAction", "resolve_max_concurrent_envs"} <= set(
        exported
    )
