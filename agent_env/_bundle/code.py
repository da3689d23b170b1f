"""The bundle's own Python, run: its envs (`envs/NAME.py`, one Env subclass each) and the public
functions of `verifiers.py` and `users.py`. A bundle is trusted code; an import that raises is a
problem naming the file and the line it raised at."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import sys
import traceback
from pathlib import Path
from types import ModuleType

from agent_env._bundle.folder import BundleFolder
from agent_env._env import Env, EnvDefinition
from agent_env._error_types import EnvDefinitionError
from agent_env._verifiers import VerifierFunction

_module_counter = itertools.count()


def module_package(root: Path) -> str:
    """A name, new at each load, for the package the bundle's modules are imported under: two loads,
    or two bundles, never share a module."""
    package = f"_agent_env_bundle_{hashlib.sha1(str(root).encode()).hexdigest()[:8]}"
    return f"{package}_{next(_module_counter)}"


def python_envs(folder: BundleFolder, package: str) -> dict[str, EnvDefinition]:
    """The Env subclass of each module of `envs/` (those not starting with `_`), by the module's name."""
    directory = folder.root / "envs"
    envs: dict[str, EnvDefinition] = {}
    if not directory.is_dir():
        return envs
    for file in sorted(directory.glob("*.py")):
        if file.name.startswith("_"):
            continue
        where = f"envs/{file.name}"
        module = _import(folder, file, f"{package}.{file.stem}", where)
        if module is None:
            continue
        classes = [
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if issubclass(c, Env) and c is not Env and c.__module__ == module.__name__
        ]
        if len(classes) != 1:
            found = f" ({', '.join(c.__name__ for c in classes)})" if classes else ""
            folder.problem(
                where, f"defines {len(classes)} Env subclasses{found}; define exactly one per module"
            )
            continue
        try:
            envs[file.stem] = EnvDefinition.from_class(file.stem, classes[0])
        except EnvDefinitionError as exc:
            for error in exc.errors:
                line = f":{error.line}" if error.line else ""
                for reason in error.reasons:
                    folder.problem(f"{where}{line}", f"tool '{error.tool}': {reason}")
            if exc.seed is not None:
                folder.problem(f"{where}:{exc.seed[0]}", exc.seed[1])
    return envs


def public_functions(folder: BundleFolder, package: str, filename: str) -> dict[str, VerifierFunction]:
    """The public functions of a module of the bundle's (verifiers.py, users.py), by name."""
    file = folder.root / filename
    if not file.exists():
        return {}
    module = _import(folder, file, f"{package}.{file.stem}", filename)
    if module is None:
        return {}
    return {
        name: fn
        for name, fn in inspect.getmembers(module, inspect.isfunction)
        if not name.startswith("_") and fn.__module__ == module.__name__
    }


def _import(folder: BundleFolder, file: Path, name: str, where: str) -> ModuleType | None:
    if not folder.inside(file, where):
        return None
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(file)]
        line = f":{frames[-1].lineno}" if frames else ""
        if isinstance(exc, SyntaxError) and exc.lineno:
            line = f":{exc.lineno}"
        folder.problem(f"{where}{line}", f"failed to import: {type(exc).__name__}: {exc}")
        return None
    return module
