"""Each extra declares what its code imports, and its code imports what it declares.

The package's source is read statically (ast), by area: `openenv` is agent_env/openenv, `trl` is
agent_env/training/trl with the client it stands on (agent_env/client, which eval stands on too: the eval
extra brings the trl extra), `eval` is agent_env/eval, `mcp` is agent_env/mcp, `users` is agent_env/users,
`judge` is agent_env/judges,
`docker` is agent_env/sandbox/_docker*.py and agent_env/harbor/_compose.py (a Harbor task's compose file,
read with PyYAML: Harbor tasks run in Docker), the first and
last with their fences (agent_env/_private/openenv_*.py, docker_*.py), and the core is everything else
(agent_env/training/__init__.py included: importing agent_env.training must need no extra). Every import
counts, at the top, under `if TYPE_CHECKING:` or lazily inside a function. Import names map to
distributions through importlib.metadata.packages_distributions(); what an extra declares is read from
pyproject.toml, with the base's requirements and those of the extras it includes.

That `import agent_env` pulls in neither OpenEnv nor torch is tst/unit/package_test.py's; that importing
agent_env.training.trl without the extra names `[trl]` is tst/unit/training/trl_package_test.py's.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import agent_env
from tools import notices
from tst.util import capabilities

PACKAGE = Path(agent_env.__file__).parent


def fence_of(relative: PurePosixPath, dependency: str) -> bool:
    """Whether `relative` is a fence of `dependency` (`_private/<dependency>_*.py`), of its extra's area."""
    return relative.parent == PurePosixPath("_private") and relative.match(f"{dependency}_*.py")


AREAS: dict[str, Callable[[PurePosixPath], bool]] = {
    "openenv": lambda p: p.parts[:1] == ("openenv",) or fence_of(p, "openenv"),
    "trl": lambda p: p.parts[:2] == ("training", "trl") or p.parts[:1] == ("client",),
    "eval": lambda p: p.parts[:1] == ("eval",),
    "mcp": lambda p: p.parts[:1] == ("mcp",),
    "users": lambda p: p.parts[:1] == ("users",),
    "judge": lambda p: p.parts[:1] == ("judges",),
    "docker": lambda p: (
        (p.parent == PurePosixPath("sandbox") and p.match("_docker*.py"))
        or p == PurePosixPath("harbor/_compose.py")
        or fence_of(p, "docker")
    ),
}
# Imported without being declared, on purpose: TRL brings transformers, and classes.py (and the client's
# tools.py, for offered_tools) uses it only when it
# is installed (importlib.util.find_spec), lazily; trl_package_test.py proves the import never pulls it in.
# The eval area's local model (eval/hf_policy.py) and the trl area's tiny model (training/trl/tiny.py)
# import torch, transformers (with its tokenizers) and trl only when one is made: they are the
# trainer's to pin, so the extras leave them out and name them when missing.
TRAINERS_OWN = {"torch", "transformers", "tokenizers", "trl"}
UNDECLARED = {"trl": TRAINERS_OWN, "eval": TRAINERS_OWN - {"tokenizers"}}
DECLARED = notices.declared()
PROVIDERS = importlib.metadata.packages_distributions()


def area_of(relative: PurePosixPath) -> str:
    return next((area for area, holds in AREAS.items() if holds(relative)), notices.CORE)


def imports_of(path: Path) -> set[str]:
    """The top-level names of every absolute import in a module, wherever it sits."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def third_party_imports(area: str) -> dict[str, set[str]]:
    """Each third-party module the area's code imports, with the files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = PurePosixPath(path.relative_to(PACKAGE).as_posix())
        if area_of(relative) == area:
            for name in imports_of(path) - set(sys.stdlib_module_names) - {"agent_env", "__future__"}:
                found.setdefault(name, set()).add(f"agent_env/{relative}")
    return found


def providers(module: str) -> set[str]:
    """The installed distributions that provide a top-level module."""
    return {canonicalize_name(d) for d in PROVIDERS.get(module, [])}


def installed(area: str) -> pytest.ParameterSet:
    """An area's case, which reads the installed distributions of its install, so it needs its extra."""
    needed = capabilities.extra(area)
    return pytest.param(area, marks=[pytest.mark.needs(needed)] if needed else [], id=area)


def names(requirements: list[Requirement]) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements} - {notices.SELF}


@pytest.mark.parametrize("area", [installed(area) for area in DECLARED])
def test_every_third_party_module_an_area_imports_is_declared_by_its_install(area: str) -> None:
    allowed = names(notices.install_requirements(area, DECLARED))

    undeclared = [
        f"{module} (from {', '.join(sorted(providers(module))) or 'no installed distribution'}), "
        f"imported by {', '.join(sorted(files))}"
        for module, files in sorted(third_party_imports(area).items())
        if not providers(module) & allowed and module not in UNDECLARED.get(area, set())
    ]

    assert undeclared == []


@pytest.mark.parametrize("area", [installed(area) for area in DECLARED])
def test_every_requirement_an_install_declares_is_imported_by_its_code(area: str) -> None:
    imported = set().union(*map(providers, third_party_imports(area)))

    assert sorted(names(DECLARED[area]) - imported) == []


@pytest.mark.needs(*capabilities.EVERY_EXTRA)
def test_the_trl_extra_includes_the_openenv_extra_and_so_brings_all_it_brings() -> None:
    closures = notices.closures()

    assert notices.included_extras("trl", DECLARED) == ["openenv"]
    assert sorted(closures["openenv"].keys() - closures["trl"].keys()) == []


def test_every_extra_an_extra_includes_is_one_pyproject_declares() -> None:
    extras = tomllib.loads((notices.ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    included = {
        extra
        for requirements in extras.values()
        for r in map(Requirement, requirements)
        if canonicalize_name(r.name) == notices.SELF
        for extra in r.extras
    }

    assert included
    assert sorted(included - extras.keys()) == []
