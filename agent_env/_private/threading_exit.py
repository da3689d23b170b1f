"""threading's exit hooks (`threading._register_atexit`, private to CPython), for a release at exit.

A release hook must run when the process exits, early enough that thread pools still take work:
the server's teardown (sync env hooks, sandbox removal) needs one. `atexit` runs after
`concurrent.futures` has shut every pool down; threading's exit hooks run when the main thread
ends, last registered first, and `concurrent.futures` registers its pools' shutdown there, so a hook
registered after it runs while the pools still work. Where the registry is missing, `atexit` is
the fallback.
"""

from __future__ import annotations

import atexit
import concurrent.futures.thread  # noqa: F401  (registers the pools' shutdown first, so ours runs before it)
import threading
from collections.abc import Callable


def at_exit(release: Callable[[], None]) -> None:
    """Run `release` when the main thread ends, before thread pools shut down."""
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        atexit.register(release)
        return
    try:
        register(release)
    except RuntimeError:  # the interpreter is already shutting down
        atexit.register(release)
