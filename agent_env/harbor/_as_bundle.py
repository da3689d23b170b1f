"""Harbor's task folders as a form `load_bundle` reads: the loader registered as `loaders.harbor`.

`agent_env._loading` finds it by its entry point (pyproject.toml), never by import, and asks it of
every path: a folder of Harbor tasks, one task folder, or a path written `harbor:PATH`.
"""

from __future__ import annotations

from pathlib import Path

from agent_env._bundle.loaders import TaskFolderLoader
from agent_env._bundle.reader import Bundle
from agent_env._error_types import BundleError
from agent_env.harbor._loader import harbor_folder, read_harbor


class HarborLoader:
    """Harbor task folders (Terminal-Bench's format), each task with a sandbox of its own settings."""

    def folder(self, path: str | Path) -> Path | None:
        return harbor_folder(path)

    def load(
        self, folder: Path, *, shown: str, skip_broken_tasks: bool, build_concurrency: int | None
    ) -> Bundle:
        read, problems = read_harbor(
            folder, skip_broken_tasks=skip_broken_tasks, build_concurrency=build_concurrency
        )
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


HARBOR = HarborLoader()

REGISTERED: TaskFolderLoader = HARBOR
"""What this module registers (pyproject.toml), held to the engine's contract by the type checker."""
