"""Where the agent's turns end and the verifiers' commands begin: a sandbox sealed for its verifiers.

A model in RL optimises its reward, and anything it can change in its sandbox it will: replace
`/bin/bash` so that `bash /tests/test.sh` writes the reward it wants, preload a library through
`/etc/ld.so.preload`, shadow `python3` earlier in `PATH`, leave a `conftest.py` where pytest reads
it, write the `~/.local/bin/env` a test script sources. So when the last turn ends, a sandbox is
*sealed* (`Sandbox.seal`) before any verifier runs a command in it:

- the agent's shell is ended and every process it left is killed: nothing the agent started runs
  while the verifiers do;
- the sandbox's changes to the system's own files are listed (a Docker container's, by the engine:
  `docker diff`, which no process in the container can alter); a change to a `ProtectedPaths` path
  that the task does not declare it may make (`[sandbox] may_change`, a Harbor task's
  `[agent-env] may_change`) leaves the episode unscorable: `SYSTEM_CHANGED`, naming the paths,
  never a score;
- the verifiers' commands then run in a fresh shell, started by the sandbox (a new `docker exec`,
  a new process) from the image's own `/bin/bash`, which the check above found unchanged, with an
  environment of the engine's making (`verifier_environment`).

What the agent's own runs of programs leave in places a verifier never reads from is no change of
the system's: compiled Python (`__pycache__`), caches, shell and REPL histories.
"""

from __future__ import annotations

import posixpath
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agent_env._error_types import EpisodeError, ErrorCode

PROTECTED_FOLDERS = ("/bin", "/sbin", "/usr", "/etc", "/lib", "/lib32", "/lib64", "/libx32")
"""The system's own folders: its programs, their libraries and their configuration."""
ROOT_FILES = ("conftest.py", "pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "setup.py")
"""Files at `/` that pytest reads when it runs tests under `/tests` (its configuration and its
conftest.py are looked for in the test folder's parents): changed, they could rewrite a test's
result."""
HOME_STATE = (
    ".cache",
    ".bash_history",
    ".python_history",
    ".lesshst",
    ".viminfo",
    ".wget-hsts",
    ".sqlite_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
)
"""Entries of the home folder that programs write as they run and a verifier does not read: its
caches (a verifier's own are elsewhere: `verifier_environment`) and histories. Every other hidden
entry of the home (`.local`, `.config`, `.bashrc`, `.gitconfig`, `.curlrc`, ...) is configuration
or code a verifier's programs may load, and is protected."""
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The `PATH` of an image that declares none (Docker's default)."""
SHOWN_PATHS = 20
"""How many changed paths an error names before it counts the rest."""

CHANGED, ADDED, DELETED = 0, 1, 2
"""The kinds of a `docker diff` entry, as the engine numbers them."""
_KINDS = {ADDED: "added", CHANGED: "changed", DELETED: "deleted"}


@dataclass(frozen=True)
class Change:
    """One path the sandbox's filesystem changed, as the engine's diff lists it."""

    path: str
    kind: int

    def __str__(self) -> str:
        return f"{self.path} ({_KINDS.get(self.kind, 'changed')})"


@dataclass(frozen=True)
class ProtectedPaths:
    """What an episode's agent may not change: the system's folders, the folders of the image's `PATH`
    (and, for a `bin` folder, the prefix it is the `bin` of: a virtualenv, a conda), `ROOT_FILES`,
    and the hidden entries of the verifiers' home but `HOME_STATE`; less what the task declares it
    may change, and the working folder, which is the agent's (its home's hidden entries aside)."""

    folders: tuple[str, ...]
    may_change: tuple[str, ...] = ()
    workdir: str | None = None
    home: str | None = None

    @classmethod
    def of(
        cls,
        search_path: str | None,
        *,
        may_change: Iterable[str] = (),
        workdir: str | None = None,
        home: str | None = None,
    ) -> ProtectedPaths:
        """The protected paths of an image whose `PATH` is `search_path` (None: Docker's default),
        whose verifiers run in `home` (None: a home of their own, `verifier_environment`)."""
        own = None if workdir is None or _root(workdir) else posixpath.normpath(workdir)
        folders = list(PROTECTED_FOLDERS)
        for entry in (search_path if search_path is not None else DEFAULT_PATH).split(":"):
            if not entry.startswith("/"):
                continue
            folder = posixpath.normpath(entry)
            prefix = posixpath.dirname(folder) if posixpath.basename(folder) in ("bin", "sbin") else folder
            if not _root(prefix) and (own is None or not _within(prefix, own)):
                folders.append(prefix)
        return cls(
            folders=tuple(dict.fromkeys(folders)),
            may_change=tuple(posixpath.normpath(path) for path in may_change),
            workdir=own,
            home=None if home is None or _root(home) else posixpath.normpath(home),
        )

    def forbidden(self, changes: Iterable[Change]) -> list[Change]:
        """The changes that make an episode unscorable, in the diff's order.

        A folder the diff lists because something in it was added or changed is left out: what is in
        it says more (a folder listed alone, made empty or its own mode or owner changed, counts).
        """
        listed = list(changes)
        parents = {posixpath.dirname(change.path) for change in listed if change.kind != DELETED}
        return [
            change
            for change in listed
            if not (change.kind != DELETED and change.path in parents) and self.protects(change.path)
        ]

    def protects(self, path: str) -> bool:
        """Whether a change to `path` leaves the episode unscorable."""
        if any(_within(path, allowed) for allowed in self.may_change) or _bytecode(path):
            return False
        if self.home is not None and _within(path, self.home) and path != self.home:
            entry = path[len(self.home) + 1 :].split("/")[0]
            if entry.startswith(".") and entry not in HOME_STATE:
                return True
        if self.workdir is not None and _within(path, self.workdir):
            return False
        if path in {f"/{name}" for name in ROOT_FILES}:
            return True
        return any(_within(path, folder) for folder in self.folders)


def unscorable(changes: Sequence[Change]) -> EpisodeError:
    """The error of an episode whose agent made `changes`: each path named (the first
    `SHOWN_PATHS`), and how a task whose work is to change them declares it."""
    shown = ", ".join(str(change) for change in changes[:SHOWN_PATHS])
    more = f" and {len(changes) - SHOWN_PATHS} more" if len(changes) > SHOWN_PATHS else ""
    return EpisodeError(
        ErrorCode.SYSTEM_CHANGED,
        f"the agent changed files its verifiers would run or read: {shown}{more}. The episode is "
        "unscorable (no reward, never 0). A task whose work is to change some of them declares those "
        "paths: `may_change` in bundle.toml's [sandbox], or in a Harbor task's task.toml under [agent-env]",
    )


def scratch_folder(parent: str = "/tmp") -> str:
    """A folder no one could have guessed before the seal, for the verifiers' own files: made by
    whichever of their programs writes in it first."""
    return posixpath.join(parent, f"agent-env-verifier-{secrets.token_hex(16)}")


def verifier_environment(scratch: str, *, own_home: bool) -> dict[str, str]:
    """The variables every verifier command runs with: no Python user site, and bytecode and caches
    under `scratch` (a `__pycache__` or a pip or uv cache the agent planted is never read); with
    `own_home`, a `HOME` of the verifiers' own too (a sandbox whose home is the agent's working
    folder). A Harbor task's tests keep the image's `HOME`, as Harbor runs them: its hidden entries
    are protected instead (`ProtectedPaths`)."""
    environment = {
        "PYTHONNOUSERSITE": "1",
        "PYTHONPYCACHEPREFIX": posixpath.join(scratch, "pycache"),
        "XDG_CACHE_HOME": posixpath.join(scratch, "cache"),
    }
    if own_home:
        environment["HOME"] = posixpath.join(scratch, "home")
    return environment


def changes_of(diff: Iterable[Mapping[str, object]] | None) -> list[Change]:
    """The engine's diff (`container.diff()`: dicts of `Path` and `Kind`) as changes."""
    return [Change(str(entry["Path"]), int(str(entry.get("Kind", CHANGED)))) for entry in diff or ()]


def _root(path: str) -> bool:
    return posixpath.normpath(path) in ("/", "//")


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _bytecode(path: str) -> bool:
    """Compiled Python the agent's own runs of Python wrote: never read by a verifier, whose bytecode
    lives apart (`verifier_environment`)."""
    parts = path.split("/")
    return "__pycache__" in parts and (parts[-1] == "__pycache__" or parts[-1].endswith(".pyc"))
