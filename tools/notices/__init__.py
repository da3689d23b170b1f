"""THIRD_PARTY_NOTICES.md, generated from the locked packages' metadata as installed: `make notices`.

closure: what each install brings; metadata: what a distribution's metadata says of it (with the
hand-reviewed answers); render: the file; __main__: the command line and its --check.
"""

from __future__ import annotations

from tools.lockfile import ROOT
from tools.notices.closure import (
    CORE,
    NOTICES,
    REGENERATE,
    SELF,
    NoticesError,
    closures,
    declared,
    included_extras,
    install_requirements,
    require_locked,
)
from tools.notices.render import listed_versions, render

__all__ = [
    "CORE",
    "NOTICES",
    "REGENERATE",
    "ROOT",
    "SELF",
    "NoticesError",
    "closures",
    "declared",
    "included_extras",
    "install_requirements",
    "listed_versions",
    "render",
    "require_locked",
]
