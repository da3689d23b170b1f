"""The one way in to a bundle, whatever its form: a bundle folder, or a Harbor dataset read as one.

It stands above both readers (`agent_env._bundle.reader` and `agent_env.harbor`), so neither imports
the other: Harbor's loader makes the engine's tasks, and the engine never knows Harbor's files.
"""

from __future__ import annotations

from pathlib import Path

from agent_env._bundle.reader import Bundle, read_bundle_folder
from agent_env._error_types import BundleError
from agent_env.harbor._loader import harbor_folder, read_harbor


def names_a_bundle(target: str | Path) -> bool:
    """Whether `target` names a bundle (a folder, or `harbor:PATH`) rather than a server's URL: the one
    rule `evaluate` and `agent-env eval` tell them apart by."""
    return Path(target).is_dir() or harbor_folder(target) is not None


def load_bundle(
    path: str | Path, *, skip_broken_tasks: bool = False, build_concurrency: int | None = None
) -> Bundle:
    """Load and check the bundle at `path`; raises one BundleError listing every problem.

    A folder of Harbor tasks (or one task folder: task.toml and instruction.md), or a path written
    `harbor:PATH`, is read as one (`agent_env.harbor`), its images built in the Docker engine,
    `build_concurrency` at once (default: $AGENTENV_BUILD_CONCURRENCY, else twice the cores, at most
    8).

    With `skip_broken_tasks`, a task whose problems are all its own (a Harbor task folder's, a line of
    tasks/SPLIT.jsonl's) is left out, in `Bundle.skipped`, and the others load, so one broken task
    does not stop a dataset; the tasks after a skipped line of a split take the indices it leaves.
    Any other problem, or no task left to load, is still a BundleError."""
    harbor = harbor_folder(path)
    if harbor is not None:
        return _harbor_bundle(harbor, str(path), skip_broken_tasks, build_concurrency)
    return read_bundle_folder(path, skip_broken_tasks=skip_broken_tasks)


def _harbor_bundle(folder: Path, shown: str, skip: bool, build_concurrency: int | None) -> Bundle:
    read, problems = read_harbor(folder, skip_broken_tasks=skip, build_concurrency=build_concurrency)
    if read is None or problems:
        raise BundleError(shown, problems)
    return Bundle(
        read.name,
        read.path,
        read.config,
        {},
        read.agents,
        read.splits,
        read.content_digest,
        read.solutions,
        sandbox_per_task=True,
        skipped=read.skipped,
    )
