"""Task folders of a form other than a bundle's, read as a `Bundle`: what such a loader implements.

`load_bundle` (`agent_env._loading`) asks each loader registered as an entry point `loaders.NAME`
(`agent_env._contracts.registry`) whether a path is in its form, and has the first that says so read
it; a path none claims is read as a bundle folder. Harbor's task folders (`loaders.harbor`,
`agent_env.harbor`) are this distribution's; another package adds a form of its own the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from agent_env._bundle.reader import Bundle


class TaskFolderLoader(Protocol):
    """A form of task folders, read as a bundle: its detection and its load."""

    def folder(self, path: str | Path) -> Path | None:
        """The folder of tasks in this form that `path` names, else None (it is not in this form)."""

    def load(
        self, folder: Path, *, shown: str, skip_broken_tasks: bool, build_concurrency: int | None
    ) -> Bundle:
        """The tasks under `folder` as a bundle; one BundleError naming every problem, `shown` naming
        the path as the user gave it. With `skip_broken_tasks`, a task whose problems are all its own
        is left out (`Bundle.skipped`); `build_concurrency`: images built at once, where it builds."""
