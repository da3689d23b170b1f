"""What `agent_env._private.threading_exit` expects of CPython's threading: exit hooks that run before
thread pools shut down."""

from __future__ import annotations

import inspect
import subprocess
import sys
import threading


def test_threading_still_has_register_atexit() -> None:
    register = threading._register_atexit

    assert list(inspect.signature(register).parameters) == ["func", "arg", "kwargs"]


def test_threading_s_exit_hooks_still_run_while_thread_pools_take_work() -> None:
    code = (
        "import concurrent.futures\n"
        "from agent_env._private.threading_exit import at_exit\n"
        "pool = concurrent.futures.ThreadPoolExecutor(1)\n"
        "at_exit(lambda: print(pool.submit(lambda: 'the pool took the release').result()))\n"
    )

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert (done.stdout.strip(), done.stderr) == ("the pool took the release", "")
