"""The one way in to a bundle, whatever its form: a bundle folder, or task folders of another form
(Harbor's) read as one.

The other forms are read by loaders the engine's contract describes (`agent_env._bundle.loaders`)
and found by their entry points (`loaders.NAME`, `agent_env._contracts.registry`): this module never
imports one, so Harbor's loader makes the engine's tasks, the engine never knows Harbor's files, and
another package can add a form of its own.
"""

from __future__ import annotations

from pathlib import Path

from agent_env._bundle.loaders import TaskFolderLoader
from agent_env._bundle.reader import Bundle, read_bundle_folder
from agent_env._contracts.registry import LOADER_PREFIX, part, registered_under


def names_a_bundle(target: str | Path) -> bool:
    """Whether `target` names a bundle (a folder, or `harbor:PATH`) rather than a server's URL: the one
    rule `evaluate` and `agent-env eval` tell them apart by."""
    return Path(target).is_dir() or _form_of(target) is not None


def load_bundle(
    path: str | Path, *, skip_broken_tasks: bool = False, build_concurrency: int | None = None
) -> Bundle:
    """Load and check the bundle at `path`; raises one BundleError listing every problem.

    A folder of Harbor tasks (or one task folder: task.toml and instruction.md), or a path written
    `harbor:PATH`, is read as one (`agent_env.harbor`), its images built in the Docker engine,
    `build_concurrency` at once (default: $AGENTENV_BUILD_CONCURRENCY, else twice the cores, at most
    8); so is a path in the form of another registered loader (`loaders.NAME`).

    With `skip_broken_tasks`, a task whose problems are all its own (a Harbor task folder's, a line of
    tasks/SPLIT.jsonl's) is left out, in `Bundle.skipped`, and the others load, so one broken task
    does not stop a dataset; the tasks after a skipped line of a split take the indices it leaves.
    Any other problem, or no task left to load, is still a BundleError."""
    found = _form_of(path)
    if found is not None:
        loader, folder = found
        return loader.load(
            folder, shown=str(path), skip_broken_tasks=skip_broken_tasks, build_concurrency=build_concurrency
        )
    return read_bundle_folder(path, skip_broken_tasks=skip_broken_tasks)


def _form_of(path: str | Path) -> tuple[TaskFolderLoader, Path] | None:
    """The first registered loader (this distribution's first) whose form `path` is in, and its folder;
    None for a bundle folder (its bundle.toml says so, whatever else is installed)."""
    if (Path(path) / "bundle.toml").is_file():
        return None
    for name in registered_under(LOADER_PREFIX):
        loader: TaskFolderLoader = part(LOADER_PREFIX + name)
        folder = loader.folder(path)
        if folder is not None:
            return loader, folder
    return None
