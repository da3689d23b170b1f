"""5. Start-up: a fresh process's time to import the package, the trainer's side, and to a ready AgentEnv.

Each figure is the median of fresh processes, less the time of a process that imports nothing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, Figure, Results

STEPS = {
    "import agent_env": "import agent_env",
    "import agent_env.training.trl": "import agent_env.training.trl",
    "AgentEnv.local(harbor): dataset and factory built": (
        "from agent_env.training.trl import AgentEnv\n"
        "env = AgentEnv.local('examples/harbor')\n"
        "env.dataset, env.factory\n"
        "env.close()"
    ),
}


def seconds(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=300)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(results: Results, workdir: Path, *, quick: bool) -> None:
    runs = 1 if quick else 3
    floor = seconds("pass", runs)
    results.add(Figure("startup", "python -c pass (subtracted below)", floor, "s"))
    for name, code in STEPS.items():
        results.add(Figure("startup", name, seconds(code, runs) - floor, "s"))
