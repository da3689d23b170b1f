"""Run a release hook when the process exits, early enough that thread pools still take work.

`atexit` runs after `concurrent.futures` has shut every thread pool down, and the server's teardown
(sync env hooks, sandbox removal) needs one. So hooks go where `concurrent.futures` registers its
own: threading's exit hooks, run (last registered first) when the main thread ends, before pools
shut down. That registry is private to CPython's threading module; where it is missing, `atexit` is
the fallback.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable


def at_exit(release: Callable[[], None]) -> None:
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        atexit.register(release)
        return
    try:
        register(release)
    except RuntimeError:  # the interpreter is already shutting down
        atexit.register(release)
