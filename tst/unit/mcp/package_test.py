"""The `mcp` extra: an MCP env needs it, and without it a bundle that declares one is refused at load
naming the install line, and the session's module fails at import naming it too; `import agent_env`
and loading such a bundle import none of the SDK.

Each runs in a fresh interpreter that blocks a package (a None entry in `sys.modules` makes its
import raise ImportError), as on a machine without it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tst.support.wharf import WHARF

LIBRARY = WHARF.parent / "library"
INSTALL = "pip install 'agentenv-framework[mcp]'"


def python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("missing", ["mcp", "jsonschema", "httpx", "anyio"])
def test_importing_the_mcp_session_without_the_extra_fails_naming_mcp(missing: str) -> None:
    code = f"""
import sys
sys.modules[{missing!r}] = None
try:
    import agent_env.mcp._env
except ImportError as error:
    print(error)
"""
    printed = python(code)

    assert missing in printed and INSTALL in printed


def test_a_bundle_with_an_mcp_env_is_refused_without_the_extra_naming_its_install_line() -> None:
    code = f"""
import sys
sys.modules["mcp"] = None
from agent_env import BundleError, load_bundle
try:
    load_bundle({str(LIBRARY)!r})
except BundleError as error:
    print(error)
"""
    assert f"bundle.toml: mcp.catalog: MCP envs need the mcp extra, not installed here: {INSTALL}" in python(
        code
    )


@pytest.mark.needs("mcp_installed")
def test_loading_a_bundle_with_an_mcp_env_imports_nothing_of_the_sdk() -> None:
    code = f"""
import sys
from agent_env import load_bundle
load_bundle({str(LIBRARY)!r}).task("train", 0).spec
print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"mcp", "jsonschema", "anyio", "httpx", "openai"}}))
"""
    assert python(code) == "[]"
