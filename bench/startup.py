"""5. Start-up: a fresh process's time to import the package, the trainer's side, and to a ready AgentEnv.

Each figure is the median of fresh processes, less the time of a process that imports nothing. The
target is on what `AgentEnv.local` adds to its imports: loading the bundle, serving it, reading the
Task API and building the factory's classes, at most 1 s. Its imports are measured as a process that
imports exactly the modules a process building the factory ends up with (the trainer's side, the
server's, OpenEnv's, and torch, which transformers loads to render tools as TRL does, and which a
trainer's script has loaded long before), and does nothing else.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, Figure, Results

LOCAL = "AgentEnv.local(wharf): dataset and factory built"
IMPORTS = "the modules AgentEnv.local(wharf) imports, imported alone"
TARGET_OVER_IMPORTS_S = 1.0
_BUILD = (
    "from agent_env.training.trl import AgentEnv\n"
    "env = AgentEnv.local('examples/wharf')\n"
    "env.dataset, env.factory\n"
    "env.close()\n"
)
_IMPORT_EACH = (
    "import importlib, json, sys\n"
    "for name in json.loads(sys.stdin.read()):\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except Exception:\n"
    "        pass\n"
)

STEPS = {
    "import agent_env": "import agent_env",
    "import agent_env.training.trl": "import agent_env.training.trl",
    LOCAL: _BUILD,
}


def seconds(code: str, runs: int, given: str = "") -> float:
    """The median seconds of fresh processes running `code`, with `given` on their standard input."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, check=True, timeout=300, input=given, text=True
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def modules_built_with() -> list[str]:
    """The modules a process has imported once it has built the factory, in the order it did."""
    listing = _BUILD + "import json, sys\nprint(json.dumps(list(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", listing], cwd=ROOT, check=True, timeout=300, capture_output=True, text=True
    )
    names: list[str] = json.loads(done.stdout.splitlines()[-1])
    return [name for name in names if name != "__main__"]


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    runs = 1 if quick else 3
    floor = seconds("pass", runs)
    results.add(Figure("startup", "python -c pass (subtracted below)", floor, "s"))
    measured = {name: seconds(code, runs) - floor for name, code in STEPS.items()}
    measured[IMPORTS] = seconds(_IMPORT_EACH, runs, json.dumps(modules_built_with())) - floor
    for name, value in measured.items():
        results.add(Figure("startup", name, value, "s"))
    over = measured[LOCAL] - measured[IMPORTS]
    results.add(
        Figure("startup", "AgentEnv.local(wharf) beyond its imports", over, "s", TARGET_OVER_IMPORTS_S)
    )
