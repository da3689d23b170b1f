"""A stand-in trainer process: it plays one rollout part way, says so, then exits or waits to be killed.

    python -m tst.unit.training._trainer URL exit|wait
    python -m tst.unit.training._trainer --local BUNDLE SANDBOX_PARENT exit|wait

With --local it serves the bundle in process (AgentEnv.local) and plays its bash task in a sandbox
under SANDBOX_PARENT. It prints `playing` once its episode is deployed and has made a call.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from agent_env.sandbox import LocalSandboxProvider
from agent_env.training.trl import AgentEnv

_WAIT_S = 120


def main(arguments: list[str]) -> None:
    if arguments[0] == "--local":
        bundle, parent, mode = arguments[1:4]
        env = AgentEnv.local(bundle, sandbox=LocalSandboxProvider(Path(parent)))
        index = next(i for i, row in enumerate(env.dataset) if row["environment"] == "dock+bash")
        environment = env.factory["dock+bash"]()  # type: ignore[index]
        environment.reset(**{k: v for k, v in env.dataset[index].items() if k != "environment"})
        environment.bash(command="echo started > note")
    else:
        url, mode = arguments[0], arguments[1]
        env = AgentEnv(url)
        environment = env.factory()  # type: ignore[operator]
        environment.reset(**env.dataset[0])
        environment.list_crates()
    print("playing", flush=True)
    if mode == "wait":
        time.sleep(_WAIT_S)


if __name__ == "__main__":
    main(sys.argv[1:])
